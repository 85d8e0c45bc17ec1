/**
 * `GET /openapi.json`: the management API described from the same TypeBox models that
 * check its bodies (src/wire/), so the description cannot drift from the validation.
 * The operations are listed here once, with their parameters and answers; a test
 * holds this list to the routes the app serves.
 */
import type { TSchema } from "@sinclair/typebox";
import * as accounts from "./accounts.ts";
import * as config from "./config.ts";
import * as notices from "./notices.ts";
import * as oplog from "./oplog.ts";
import * as pricing from "./pricing.ts";
import * as keys from "./provider-keys.ts";
import * as requests from "./requests.ts";
import * as route from "./route.ts";
import * as usage from "./usage.ts";
import * as signup from "./signup.ts";
import * as health from "./health.ts";
import { KEY_FORMATS, KEY_RECORD_FORMS } from "./constants.ts";
// The bounds the routes check, imported so that the document states the same numbers.
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../http/pagination.ts";
import { LOG_MAX_PAGE_SIZE, LOG_PAGE_SIZE } from "../admin/oplog/query.ts";
import { MAX_RANGE_DAYS } from "../metering/reports/dates.ts";
import { ACCOUNT_ORDERS } from "../store/store.ts";
import { errorResponses } from "./openapi-errors.ts";

/** The models published under `components.schemas`, by name. */
const MODELS: Record<string, TSchema> = {
  AccountBody: accounts.AccountBody,
  AccountCreateBody: accounts.AccountCreateBody,
  BatchCreditBody: accounts.BatchCreditBody,
  ManagedAccount: accounts.ManagedAccount,
  CreatedAccount: accounts.CreatedAccount,
  AccountInfo: accounts.AccountInfo,
  AccountDeleted: accounts.AccountDeleted,
  RotateSelfBody: accounts.RotateSelfBody,
  RotatedKey: accounts.RotatedKey,
  AccountStatus: accounts.AccountStatus,
  CreditReport: accounts.CreditReport,
  BatchResult: accounts.BatchResult,
  ConfigExport: config.ConfigExport,
  ConfigUpdateBody: config.ConfigUpdateBody,
  ConfigResetBody: config.ConfigResetBody,
  TestMailBody: config.TestMailBody,
  TestMailResult: config.TestMailResult,
  NoticeBody: notices.NoticeBody,
  Notice: notices.Notice,
  NoticeFeed: notices.NoticeFeed,
  NoticeDeleted: notices.NoticeDeleted,
  LogPage: oplog.LogPage,
  PricingAnswer: pricing.PricingAnswer,
  ProviderKeyCreateBody: keys.ProviderKeyCreateBody,
  ProviderKeyUpdateBody: keys.ProviderKeyUpdateBody,
  ProviderKeySummary: keys.ProviderKeySummary,
  ProviderKeyOverview: keys.ProviderKeyOverview,
  ProviderKeyRecord: keys.ProviderKeyRecord,
  ProviderKeyEdit: keys.ProviderKeyEdit,
  ProviderKeyDeleted: keys.ProviderKeyDeleted,
  KeyTestResult: keys.KeyTestResult,
  LiveUsage: usage.LiveUsage,
  BillInfo: usage.BillInfo,
  RankedBill: usage.RankedBill,
  RequestRecord: requests.RequestRecord,
  RouteExplanation: route.RouteExplanation,
  Health: health.Health,
  Readiness: health.Readiness,
  SignupBody: signup.SignupBody,
  SignupConfirmBody: signup.SignupConfirmBody,
  SignupCreated: signup.SignupCreated,
  SignupPending: signup.SignupPending,
};

type Model = keyof typeof MODELS;
type Who = "any" | "owner" | "manager" | "none" | "optional" | "metrics";

interface Parameter {
  name: string;
  in: "query" | "path";
  type: "string" | "integer" | "boolean";
  description: string;
  /** More of the parameter's schema: its values (`enum`), range and default, as the server checks them. */
  schema?: Record<string, unknown>;
  /** A query parameter the route refuses to go without (path parameters always are). */
  required?: boolean;
}

interface Operation {
  /** The operationId: a stable method name for generated clients, whatever the path's wording. */
  id: string;
  method: "get" | "post" | "put" | "delete";
  path: string;
  summary: string;
  who: Who;
  params?: Parameter[];
  body?: Model | Record<string, unknown>;
  /** The route also takes no body at all (what it does then is in the summary). */
  bodyOptional?: true;
  /** The success status and its model (`[Model]` for a JSON array); a plain object for inline schemas. */
  answer: [number, Model | [Model] | Record<string, unknown>];
  /** Another answer that is not an error (its body is not the error envelope). */
  also?: [number, Model];
  /** Error statuses beyond those derived from `who`, parameters and body (openapi-errors.ts). */
  errors?: number[];
}

/** What the served routes depend on: the sign-up paths exist only with --signup, and their answers follow --signup-smtp. */
export interface DescribedConfig {
  signup?: boolean;
  signupSmtp?: string;
}

const ref = (model: string) => ({ $ref: `#/components/schemas/${model}` });
const q = (name: string, type: Parameter["type"], description: string, schema?: Parameter["schema"]): Parameter => ({ name, in: "query", type, description, schema });
const p = (name: string, description: string, type: Parameter["type"] = "string", schema?: Parameter["schema"]): Parameter => ({ name, in: "path", type, description, schema });

const pageOf = (size: number, max: number) => [
  q("page", "integer", "1-based page; past the last, an empty page", { minimum: 1, default: 1 }),
  q("size", "integer", `rows per page (default ${size}, at most ${max})`, { minimum: 1, maximum: max, default: size }),
];
const PAGE = pageOf(DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
const ACCOUNT_LIST = [
  ...PAGE,
  q("id", "integer", "an account ID", { minimum: 1 }),
  q("level", "integer", "an account's Level, as its record shows it: its depth in the tree, owners are 1, their accounts 2", { minimum: 1 }),
  q("name", "string", "case-insensitive substring of the name"),
  q("email", "string", "case-insensitive substring of the email"),
  q("order", "string", "the sort, descending with a leading -", { enum: [...ACCOUNT_ORDERS], default: "id" }),
];
const RANGE = [
  q("date", "string", "one business day, YYYY-MM-DD", { format: "date" }),
  q("start", "string", "first business day, YYYY-MM-DD", { format: "date" }),
  q("end", "string", "last business day, YYYY-MM-DD (with start)", { format: "date" }),
  q("days", "integer", `the last N business days, today included (1 to ${MAX_RANGE_DAYS})`, { minimum: 1, maximum: MAX_RANGE_DAYS }),
];
const FIELDS = q(
  "fields",
  "string",
  "summary (the spec's masked record, ProviderKeySummary), overview (summary, type, service account, sleep, Health; no secret: ProviderKeyOverview), edit (the full record without SecretKey: ProviderKeyEdit) or full (default, with Health: ProviderKeyRecord); a write's answer too",
  { enum: [...KEY_RECORD_FORMS], default: "full" },
);
/** A key in the form `fields` asked for: one schema per form, since a client may ask for any. */
const KEY_FORM = {
  anyOf: [ref("ProviderKeyRecord"), ref("ProviderKeyEdit"), ref("ProviderKeyOverview"), ref("ProviderKeySummary")],
  description: "the form the fields parameter selects",
};
const IDENTIFIER = p("identifier", "an account ID, name or email");
const KEY_ID = p("id", "a provider key ID", "integer", { minimum: 1 });

const OPERATIONS: Operation[] = [
  { id: "getHealth", method: "get", path: "/healthz", summary: "Liveness, with the state of the database and Redis", who: "none", answer: [200, "Health"] },
  { id: "getReadiness", method: "get", path: "/readyz", summary: "Readiness: 503 while a dependency is down or a graceful stop began", who: "none", answer: [200, "Readiness"], also: [503, "Readiness"] },
  // Not open: it needs an owner key or the metrics token, both sent as the bearer.
  { id: "getMetrics", method: "get", path: "/metrics", summary: "Prometheus metrics", who: "metrics", answer: [200, { type: "string" }] },
  { id: "getOpenApi", method: "get", path: "/openapi.json", summary: "This description", who: "none", answer: [200, { type: "object" }] },

  { id: "getStatus", method: "get", path: "/dashboard/status", summary: "The caller's account, level and balance", who: "any", answer: [200, "AccountStatus"] },
  { id: "getCredit", method: "get", path: "/dashboard/credit", summary: "The caller's credit grants and balance", who: "any", answer: [200, "CreditReport"] },
  { id: "getAccountInfo", method: "get", path: "/dashboard/info", summary: "The caller's full account record", who: "any", answer: [200, "AccountInfo"] },
  { id: "getLiveUsage", method: "get", path: "/dashboard/live", summary: "Today's and this month's usage of the caller", who: "any", answer: [200, "LiveUsage"] },
  { id: "getBill", method: "get", path: "/dashboard/bill", summary: "The caller's bill over a range", who: "any", params: RANGE, answer: [200, "BillInfo"] },
  { id: "listNewsFeed", method: "get", path: "/dashboard/news", summary: "Unexpired notices addressed to the caller", who: "any", answer: [200, "NoticeFeed"] },
  {
    id: "listOperationLog", method: "get",
    path: "/dashboard/logs",
    summary: "The operation log, newest first",
    who: "owner",
    params: [...pageOf(LOG_PAGE_SIZE, LOG_MAX_PAGE_SIZE), q("action", "string", "an action, or a pattern with *"), q("target", "integer", "an account ID", { minimum: 1 }), q("since", "string", "a date or an instant"), q("until", "string", "a date or an instant")],
    answer: [200, "LogPage"],
  },

  { id: "listAccounts", method: "get", path: "/x-users", summary: "Direct accounts of the caller", who: "manager", params: ACCOUNT_LIST, answer: [200, ["ManagedAccount"]] },
  { id: "createAccount", method: "post", path: "/x-users", summary: "Create a direct account (its API key is in the answer, once)", who: "manager", body: "AccountCreateBody", answer: [201, "CreatedAccount"] },
  { id: "getAccount", method: "get", path: "/x-users/{identifier}", summary: "One direct account", who: "manager", params: [IDENTIFIER], answer: [200, "ManagedAccount"] },
  { id: "updateAccount", method: "put", path: "/x-users/{identifier}", summary: "Update an account of the caller's subtree", who: "manager", params: [IDENTIFIER], body: "AccountBody", answer: [200, "ManagedAccount"] },
  { id: "deleteAccount", method: "delete", path: "/x-users/{identifier}", summary: "Delete an account of the caller's subtree; its credit returns to its parent", who: "manager", params: [IDENTIFIER], answer: [200, "AccountDeleted"] },
  { id: "batchCredit", method: "post", path: "/x-users/batch-credit", summary: "Add or deduct credit for several accounts (DryRun previews)", who: "manager", body: "BatchCreditBody", answer: [200, "BatchResult"] },
  { id: "listDescendants", method: "get", path: "/x-dna", summary: "Every descendant of the caller", who: "manager", params: ACCOUNT_LIST, answer: [200, ["ManagedAccount"]] },
  { id: "getDescendant", method: "get", path: "/x-dna/{identifier}", summary: "One descendant", who: "manager", params: [IDENTIFIER], answer: [200, "ManagedAccount"] },
  {
    id: "rotateOwnKey", method: "post",
    path: "/x-self",
    summary: "Rotate the caller's API key (the new key is in the answer, once)",
    who: "any",
    body: "RotateSelfBody",
    answer: [200, "RotatedKey"],
  },
  { id: "getDescendantsBill", method: "get", path: "/x-bill", summary: "The bill of the caller's descendants (or one subtree), with the ranking", who: "manager", params: [...RANGE, q("user", "string", "one descendant (ID, name or email) and its subtree")], answer: [200, "RankedBill"], errors: [404] },

  {
    id: "explainRoute", method: "get",
    path: "/x-route",
    summary: "How a call for a model by an account would be served now: rules, Levels, keys in pick order, price, limits",
    who: "manager",
    params: [
      { ...q("model", "string", "the model a client would ask for"), required: true },
      q("account", "string", "an account (ID, name or email) of the caller's subtree; default the caller"),
      q("format", "string", "the client's API: openai (Chat Completions), responses, anthropic, gemini (`family` is accepted as its former name)", { enum: [...KEY_FORMATS], default: "openai" }),
    ],
    answer: [200, "RouteExplanation"],
    errors: [404],
  },
  {
    id: "listRequests", method: "get",
    path: "/x-requests",
    summary: "Model calls, newest first: an owner's tenant, a manager's subtree (no key ids), any account's own; Resources allowing /dashboard/* open one's own calls too (404 request_log_off when the router runs with --request-log-days 0)",
    who: "any",
    params: [
      ...PAGE,
      q("account", "string", "an account (ID, name or email) within the caller's scope"),
      q("model", "string", "the requested or effective model"),
      q("status", "string", "an HTTP status (429) or a class (5xx)"),
      q("key_id", "integer", "calls any of whose attempts used this provider key (owner only)", { minimum: 1 }),
      q("level", "integer", "calls any of whose attempts used this Level (owner only)", { minimum: 1 }),
      q("since", "string", "a date or an instant"),
      q("until", "string", "a date or an instant"),
      q("request_id", "string", "one request id"),
    ],
    answer: [200, ["RequestRecord"]],
    errors: [404],
  },
  { id: "getRequest", method: "get", path: "/x-requests/{request_id}", summary: "One model call in full, with its attempts", who: "any", params: [p("request_id", "the X-Request-Id the router returned")], answer: [200, "RequestRecord"] },
  { id: "getPricing", method: "get", path: "/x-pricing", summary: "The prices that apply (catalog and overrides)", who: "optional", answer: [200, "PricingAnswer"] },
  { id: "getConfig", method: "get", path: "/x-config", summary: "Every configuration item", who: "owner", answer: [200, "ConfigExport"] },
  { id: "updateConfig", method: "put", path: "/x-config", summary: "Change configuration items (only those sent)", who: "owner", body: "ConfigUpdateBody", answer: [200, "ConfigExport"] },
  {
    id: "resetConfig", method: "delete",
    path: "/x-config",
    summary: "Reset configuration items to their defaults (without a body: PRICING)",
    who: "owner",
    body: "ConfigResetBody",
    bodyOptional: true,
    answer: [200, "ConfigExport"],
  },
  {
    id: "sendTestMail", method: "post",
    path: "/x-config/test-mail",
    summary: "Send a test mail with the stored mail settings (without a body, or without to: to the caller's own address)",
    who: "owner",
    body: "TestMailBody",
    bodyOptional: true,
    answer: [200, "TestMailResult"],
    errors: [429, 502],
  },

  { id: "listProviderKeys", method: "get", path: "/x-keys", summary: "Provider keys, by id", who: "owner", params: [FIELDS, ...PAGE, q("id", "integer", "a key ID", { minimum: 1 }), q("level", "integer", "a Level", { minimum: 1 }), q("provider", "string", "a substring of the URL, in any letter case")], answer: [200, { type: "array", items: KEY_FORM }] },
  { id: "createProviderKey", method: "post", path: "/x-keys", summary: "Add a provider key", who: "owner", params: [FIELDS], body: "ProviderKeyCreateBody", answer: [201, KEY_FORM] },
  { id: "getProviderKey", method: "get", path: "/x-keys/{id}", summary: "One provider key", who: "owner", params: [KEY_ID, FIELDS], answer: [200, KEY_FORM] },
  { id: "updateProviderKey", method: "put", path: "/x-keys/{id}", summary: "Update a provider key (a new SecretKey rotates it)", who: "owner", params: [KEY_ID, FIELDS], body: "ProviderKeyUpdateBody", answer: [200, KEY_FORM] },
  { id: "deleteProviderKey", method: "delete", path: "/x-keys/{id}", summary: "Delete a provider key (force: even the last enabled key of a Level)", who: "owner", params: [KEY_ID, q("force", "boolean", "delete the last enabled key of a Level too")], answer: [200, "ProviderKeyDeleted"] },
  { id: "sleepProviderKey", method: "post", path: "/x-keys/{id}/sleep", summary: "Put a key to sleep until woken", who: "owner", params: [KEY_ID, FIELDS], answer: [200, KEY_FORM] },
  { id: "wakeProviderKey", method: "post", path: "/x-keys/{id}/wake", summary: "Wake a key", who: "owner", params: [KEY_ID, FIELDS], answer: [200, KEY_FORM] },
  {
    id: "testProviderKey", method: "post",
    path: "/x-keys/{id}/test",
    summary: "The cheapest call the key allows (a model list, or a Vertex token), and what came of it in words",
    who: "owner",
    params: [KEY_ID],
    answer: [200, "KeyTestResult"],
  },

  { id: "listNotices", method: "get", path: "/x-news", summary: "Notices the caller published (and, for owners, every system-wide one)", who: "any", params: PAGE, answer: [200, ["Notice"]] },
  { id: "publishNotice", method: "post", path: "/x-news", summary: "Publish a notice", who: "any", body: "NoticeBody", answer: [201, "Notice"] },
  { id: "deleteNotice", method: "delete", path: "/x-news/{id}", summary: "Delete a notice (its author or an owner)", who: "any", params: [p("id", "a notice ID")], answer: [200, "NoticeDeleted"] },
];

const schemaOf = (spec: Model | [Model] | Record<string, unknown>): Record<string, unknown> =>
  typeof spec === "string" ? ref(spec) : Array.isArray(spec) ? { type: "array", items: ref(spec[0]!) } : spec;

const WHO: Record<Who, string> = {
  none: "No key needed.",
  optional: "No key needed: without one the public prices; with a key, the account's own, when its Resources allow the path.",
  any: "Any account whose Resources allow the path.",
  // Resources are checked on every path: managing accounts (/x-users) does not open /x-bill or /x-route.
  manager: "An account that manages accounts (its Resources allow /x-users) and whose Resources allow the path.",
  owner: "Owner accounts only.",
  metrics: "An owner key, or the bearer token given by --metrics-token (in the BYOK style only that token).",
};

/** Every management write takes one (http/idempotency.ts; docs/api.md, "Idempotent writes"). */
const IDEMPOTENCY_KEY = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    "Runs the write once: a retry with the same key and request within 24 hours gets the first answer again (with Idempotent-Replayed: true) and writes nothing; the same key with another request is 422, with one still running 409",
  schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7e]+$" },
};

/** What every list answer (a JSON array) carries about its pages (spec 4.1; http/pagination.ts). */
const PAGINATION_HEADERS: Record<string, string> = {
  "X-Total-Count": "rows matching the filters, on every page",
  "X-Total-Pages": "pages of X-Per-Page rows (0 when nothing matches)",
  "X-Page": "this page, 1-based",
  "X-Per-Page": "rows per page (the size asked for, or its default)",
};
const HEADERS: Record<string, unknown> = {
  ...Object.fromEntries(Object.entries(PAGINATION_HEADERS).map(([name, description]) => [name, { description, required: true, schema: { type: "integer", minimum: 0 } }])),
  // Every answer's id: what GET /x-requests/{request_id} and the server log are keyed by (docs/api.md, Request ids and logs).
  "X-Request-Id": { description: "this request's id, in the server log and the request log", required: true, schema: { type: "string", pattern: "^req_[0-9a-f]{32}$" } },
  "Retry-After": { description: "seconds to wait before trying again", required: true, schema: { type: "integer", minimum: 0 } },
  "Idempotent-Replayed": { description: "the answer kept for this Idempotency-Key, sent again; nothing was written", schema: { type: "string", enum: ["true"] } },
};
const headerRefs = (names: readonly string[]) => Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]));

/**
 * Sign-up (BYOK, `--signup`): no key. With `--signup-smtp` the first call mails a token
 * (202) and the confirmation creates the owner; without it the first call does.
 */
function signupOperations(config: DescribedConfig): Operation[] {
  if (!config.signup) return [];
  const created: Operation["answer"] = [201, "SignupCreated"];
  return [
    { id: "signUp", method: "post", path: "/x-signup", summary: "Register the owner of a new, empty tenant (its API key in the answer, once)", who: "none", body: "SignupBody", answer: config.signupSmtp ? [202, "SignupPending"] : created, errors: config.signupSmtp ? [429, 502, 503] : [429, 503] },
    { id: "confirmSignUp", method: "post", path: "/x-signup/confirm", summary: "Confirm a sign-up with the mailed token (404 when used, wrong or expired)", who: "none", body: "SignupConfirmBody", answer: created, errors: [404, 503] },
  ];
}

const operationsOf = (config: DescribedConfig): Operation[] => [...OPERATIONS, ...signupOperations(config)];

/** The OpenAPI 3.1 document of the management API. */
export function openApiDocument(version: string, config: DescribedConfig = {}): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of operationsOf(config)) {
    const [status, answer] = op.answer;
    const success = schemaOf(answer);
    // Writes on /x- paths by an account; sign-up has no account to hold the key, and ignores it.
    const idempotent = op.method !== "get" && op.path.startsWith("/x-") && op.who !== "none";
    (paths[op.path] ??= {})[op.method] = {
      operationId: op.id,
      summary: op.summary,
      description: WHO[op.who],
      ...(op.who === "none" ? { security: [] } : {}),
      // OpenAPI's optional authentication: the empty requirement, or the bearer.
      ...(op.who === "optional" ? { security: [{}, { apiKey: [] }] } : {}),
      parameters: [
        ...(op.params ?? []).map((param) => ({
          name: param.name,
          in: param.in,
          required: param.in === "path" || param.required === true,
          description: param.description,
          schema: { type: param.type, ...param.schema },
        })),
        ...(idempotent ? [IDEMPOTENCY_KEY] : []),
      ],
      ...(op.body && { requestBody: { required: !op.bodyOptional, content: { "application/json": { schema: schemaOf(op.body) } } } }),
      responses: {
        [status]: {
          description: "Success",
          headers: headerRefs(["X-Request-Id", ...(success.type === "array" ? Object.keys(PAGINATION_HEADERS) : []), ...(idempotent ? ["Idempotent-Replayed"] : [])]),
          content: { [op.path === "/metrics" ? "text/plain" : "application/json"]: { schema: success } },
        },
        ...(op.also && { [op.also[0]]: { description: "Not ready", headers: headerRefs(["X-Request-Id"]), content: { "application/json": { schema: ref(op.also[1]) } } } }),
        ...errorResponses(
          {
            method: op.method, path: op.path, keyed: op.who !== "none", body: op.body !== undefined, idempotent, extra: op.errors,
            checkedInput: (op.params ?? []).some((param) => param.in === "query" || param.type === "integer"),
            pathId: (op.params ?? []).some((param) => param.in === "path"),
          },
          ref("Error"),
          headerRefs,
        ),
        default: { description: "Any other error, in the OpenAI envelope (docs/api.md, Error envelopes)", headers: headerRefs(["X-Request-Id"]), content: { "application/json": { schema: ref("Error") } } },
      },
    };
  }
  // TypeBox schemas are JSON Schema; a JSON round trip drops TypeBox's own symbol keys.
  const schemas: Record<string, unknown> = JSON.parse(JSON.stringify(MODELS));
  schemas.Error = {
    type: "object",
    properties: {
      error: {
        type: "object",
        properties: { message: { type: "string" }, type: { type: "string" }, param: { type: ["string", "null"] }, code: { type: ["string", "null"] } },
        required: ["message", "type"],
      },
    },
    required: ["error"],
  };
  return {
    openapi: "3.1.0",
    info: { title: "router management API", version, description: "Accounts, provider keys, configuration, usage and notices. Model endpoints follow the OpenAI, Anthropic and Gemini APIs (docs/api.md)." },
    components: { schemas, headers: HEADERS, securitySchemes: { apiKey: { type: "http", scheme: "bearer" } } },
    security: [{ apiKey: [] }],
    paths,
  };
}

/** Every operation's method and path in Elysia's form (`/x-users/:identifier`), for the test that holds this list to the app. */
export const describedRoutes = (config: DescribedConfig = {}) => operationsOf(config).map((op) => `${op.method.toUpperCase()} ${op.path.replace(/\{(\w+)\}/g, ":$1")}`);
/** Those of a router without --signup. */
export const DESCRIBED_ROUTES = describedRoutes();
