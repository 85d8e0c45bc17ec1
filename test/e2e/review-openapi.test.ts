import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { api, chatRequestId, createAccount, MANAGER_RESOURCES } from "../helpers/owner-ops.ts";
import { addKey } from "../helpers/keys.ts";
import { chatCompletion, json, startMockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { createApp } from "../../src/app.ts";
import { describedRoutes, openApiDocument } from "../../src/wire/openapi.ts";

/**
 * Review of `GET /openapi.json` against the router it describes: integrators generate
 * clients from it, so each answer is checked against the schema the document declares
 * for its operation and status, with a JSON Schema checker for the subset the document
 * uses (below), and each request the document calls valid or invalid is sent.
 */

type Schema = Record<string, any>;
type OpenApi = { paths: Record<string, Record<string, Schema>>; components: { schemas: Record<string, Schema>; headers: Record<string, Schema>; securitySchemes: Schema } } & Schema;

/** Where `value` breaks `schema` (JSON Schema 2020-12, the keywords the document uses), as "path: what". */
function faults(doc: OpenApi, schema: Schema, value: unknown, path = "$"): string[] {
  if (schema.$ref) {
    const target = doc.components.schemas[String(schema.$ref).replace("#/components/schemas/", "")];
    return target ? faults(doc, target, value, path) : [`${path}: ${schema.$ref} does not resolve`];
  }
  const out: string[] = [];
  if (schema.anyOf && !schema.anyOf.some((branch: Schema) => faults(doc, branch, value, path).length === 0)) {
    out.push(`${path}: matches no anyOf branch (${schema.anyOf.map((branch: Schema) => faults(doc, branch, value, path)[0]).join(" | ")})`);
  }
  for (const part of schema.allOf ?? []) out.push(...faults(doc, part, value, path));
  if ("const" in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) out.push(`${path}: is not ${JSON.stringify(schema.const)}`);
  if (schema.enum && !schema.enum.some((v: unknown) => JSON.stringify(v) === JSON.stringify(value))) out.push(`${path}: is not one of ${JSON.stringify(schema.enum)}`);
  if (schema.type) {
    const types: string[] = [schema.type].flat();
    const actual = value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
    if (!types.some((t) => t === actual || (t === "integer" && Number.isInteger(value)))) return [...out, `${path}: ${JSON.stringify(value)?.slice(0, 80)} is not ${types.join(" or ")}`];
  }
  if (typeof value === "number") {
    if (value < (schema.minimum ?? -Infinity) || value > (schema.maximum ?? Infinity) || value <= (schema.exclusiveMinimum ?? -Infinity)) out.push(`${path}: ${value} out of range`);
  }
  if (typeof value === "string") {
    // JSON Schema counts characters (code points), not UTF-16 units.
    const length = [...value].length;
    if (length < (schema.minLength ?? 0) || length > (schema.maxLength ?? Infinity)) out.push(`${path}: length out of range`);
    if (schema.pattern && !new RegExp(schema.pattern).test(value)) out.push(`${path}: does not match ${schema.pattern}`);
  }
  if (Array.isArray(value)) {
    if (value.length < (schema.minItems ?? 0) || value.length > (schema.maxItems ?? Infinity)) out.push(`${path}: item count out of range`);
    if (schema.items) value.forEach((item, i) => out.push(...faults(doc, schema.items, item, `${path}[${i}]`)));
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const object = value as Record<string, unknown>;
    for (const name of schema.required ?? []) if (!(name in object)) out.push(`${path}: ${name} is missing`);
    if (Object.keys(object).length < (schema.minProperties ?? 0)) out.push(`${path}: fewer than ${schema.minProperties} members`);
    for (const [name, member] of Object.entries(object)) {
      const at = `${path}.${name}`;
      let known = false;
      if (schema.properties?.[name]) (known = true), out.push(...faults(doc, schema.properties[name], member, at));
      for (const [pattern, sub] of Object.entries(schema.patternProperties ?? {})) if (new RegExp(pattern).test(name)) (known = true), out.push(...faults(doc, sub as Schema, member, at));
      if (!known && schema.additionalProperties === false) out.push(`${at}: is not a declared member`);
      if (!known && typeof schema.additionalProperties === "object") out.push(...faults(doc, schema.additionalProperties, member, at));
    }
  }
  return out;
}

let router: TestRouter;
let doc: OpenApi;
beforeAll(async () => {
  router = await startRouter();
  doc = (await (await fetch(`${router.url}/openapi.json`)).json()) as OpenApi;
});
afterAll(() => router?.stop());

/** The operation the document declares for `method` on `template` (`/x-keys/{id}`). */
function operation(method: string, template: string): Schema {
  const op = doc.paths[template]?.[method.toLowerCase()];
  if (!op) throw new Error(`${method} ${template} is not in the document`);
  return op;
}

/** The response the document declares for an answer of `status` (its own entry, else `default`). */
function declared(method: string, template: string, status: number): Schema | undefined {
  const responses = operation(method, template).responses;
  return responses[String(status)] ?? responses.default;
}

/** Sends a request and returns what about its answer breaks the schema declared for it (empty when it keeps to it). */
async function answerFaults(method: string, template: string, path: string, init: { body?: unknown; key?: string | null } = {}) {
  const reply = await api(router, path, { method, ...init });
  const response = declared(method, template, reply.status);
  const schema = response?.content?.["application/json"]?.schema;
  return { status: reply.status, body: reply.body, faults: schema ? faults(doc, schema, reply.body) : [`${reply.status} is not declared`] };
}

const KEY_BODY = { Provider: "https://api.example.com/v1", SecretKey: "sk-review-openapi-0123456789", Level: 1, Status: true };

describe("provider keys: every form `fields` selects is an answer the document declares", () => {
  // The document declared ProviderKeyRecord (with SecretKey, config, Health) for every
  // /x-keys answer, while `fields=summary` (the spec's form), `overview` and `edit` answer
  // without those members: a generated client refused the spec's own summary list.
  test("fields=summary, overview, edit and full, on lists, reads and writes", async () => {
    const created = await answerFaults("POST", "/x-keys", "/x-keys?fields=summary", { body: KEY_BODY });
    expect(created.status).toBe(201);
    expect(created.faults).toEqual([]);
    const id = created.body.ID as number;
    for (const fields of ["", "summary", "overview", "edit", "full"]) {
      const query = fields ? `?fields=${fields}` : "";
      for (const [method, template, path] of [
        ["GET", "/x-keys", `/x-keys${query}`],
        ["GET", "/x-keys/{id}", `/x-keys/${id}${query}`],
        ["POST", "/x-keys/{id}/sleep", `/x-keys/${id}/sleep${query}`],
        ["POST", "/x-keys/{id}/wake", `/x-keys/${id}/wake${query}`],
      ] as const) {
        const answer = await answerFaults(method, template, path);
        expect({ path, status: answer.status, faults: answer.faults }).toEqual({ path, status: 200, faults: [] });
      }
      const updated = await answerFaults("PUT", "/x-keys/{id}", `/x-keys/${id}${query}`, { body: { Name: `renamed ${fields}` } });
      expect({ fields, status: updated.status, faults: updated.faults }).toEqual({ fields, status: 200, faults: [] });
    }
  });

  test("the fields parameter lists the forms it takes, and a form it does not list is refused", async () => {
    const fields = operation("GET", "/x-keys").parameters.find((p: Schema) => p.name === "fields");
    expect([...fields.schema.enum].sort()).toEqual(["edit", "full", "overview", "summary"]);
    const refused = await api(router, "/x-keys?fields=masked");
    expect(refused.status).toBe(400);
    expect(refused.body.error.param).toBe("fields");
  });
});

/** Every operation in the document, with a concrete path (each path parameter `1`). */
function operations(): Array<{ method: string; template: string; path: string; op: Schema }> {
  return Object.entries(doc.paths).flatMap(([template, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ method: method.toUpperCase(), template, path: template.replace(/\{\w+\}/g, "1"), op })),
  );
}

/** Whether the document lets the operation be called without a key: no requirement, or an empty one among its alternatives. */
function anonymousAllowed(op: Schema): boolean {
  const requirements = (op.security ?? doc.security) as Schema[];
  return requirements.length === 0 || requirements.some((requirement) => Object.keys(requirement).length === 0);
}

describe("security: the document says which operations need a key, and they are those the router refuses without one", () => {
  // GET /x-pricing answers the public prices without a key (spec 4.4, 5.2), but the
  // document applied the global bearer requirement to it: a generated client demanded a
  // key for it, and an integrator reading the document believed the prices were private.
  test("without a key: 401 exactly where the document requires the bearer", async () => {
    const wrong: string[] = [];
    for (const { method, template, path, op } of operations()) {
      const reply = await api(router, path, { method, key: null, body: method === "GET" ? undefined : {} });
      if ((reply.status === 401) === anonymousAllowed(op)) wrong.push(`${method} ${template}: ${reply.status}, anonymous ${anonymousAllowed(op) ? "allowed" : "refused"} in the document`);
    }
    expect(wrong).toEqual([]);
    expect(anonymousAllowed(operation("GET", "/x-pricing"))).toBe(true);
    // With a key it still takes the bearer (the account's own prices).
    expect(operation("GET", "/x-pricing").security).toContainEqual({ apiKey: [] });
  });
});

describe("lists: the pagination headers the router sends are declared", () => {
  // Spec 4.1: list answers carry X-Total-Count, X-Total-Pages, X-Page and X-Per-Page.
  // The document declared no header at all, so a generated client could not read the
  // total or page count of /x-users, /x-dna, /x-keys, /x-requests or /x-news.
  const PAGINATION = ["X-Total-Count", "X-Total-Pages", "X-Page", "X-Per-Page"];
  test("every operation that answers them declares all four, as integers, and only those", async () => {
    const wrong: string[] = [];
    for (const { method, template, path, op } of operations()) {
      if (method !== "GET" || template.includes("{")) continue;
      const reply = await api(router, path === "/x-route" ? "/x-route?model=gpt-4o" : path);
      if (reply.status !== 200) continue;
      const sent = PAGINATION.filter((name) => reply.headers.has(name));
      const headers = op.responses["200"].headers ?? {};
      const names = Object.keys(headers);
      if (JSON.stringify(names.filter((n) => PAGINATION.includes(n))) !== JSON.stringify(sent)) wrong.push(`${template}: sends ${sent}, declares ${names}`);
      for (const name of sent) {
        const schema = headers[name]?.$ref ? doc.components.headers[String(headers[name].$ref).split("/").pop()!]?.schema : headers[name]?.schema;
        if (schema?.type !== "integer" || !/^\d+$/.test(reply.headers.get(name)!)) wrong.push(`${template}: ${name} ${reply.headers.get(name)} against ${JSON.stringify(schema)}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(Object.keys(operation("GET", "/x-users").responses["200"].headers ?? {}).filter((name) => PAGINATION.includes(name))).toEqual(PAGINATION);
  });
});

describe("query parameters: the ranges and defaults declared are those the router applies", () => {
  // The document gave `page` and `size` no range or default in their schemas, and said in
  // words "default 20" for /dashboard/logs, whose pages hold 24 rows (spec 8).
  test("size: the declared default is the page size without it, the declared maximum is accepted and one more refused", async () => {
    const checked: string[] = [];
    for (const { method, template, path, op } of operations()) {
      const size = (op.parameters as Schema[]).find((p) => p.name === "size");
      if (method !== "GET" || !size) continue;
      checked.push(template);
      const { minimum, maximum, default: fallback } = size.schema;
      expect({ template, minimum, maximum, integer: size.schema.type }).toEqual({ template, minimum: 1, maximum: 100, integer: "integer" });
      const plain = await api(router, path);
      expect(plain.status).toBe(200);
      const applied = Number(plain.headers.get("x-per-page") ?? plain.body.size);
      expect({ template, applied }).toEqual({ template, applied: fallback });
      expect((await api(router, `${path}?size=${maximum}`)).status).toBe(200);
      for (const bad of [maximum + 1, minimum - 1]) {
        const refused = await api(router, `${path}?size=${bad}`);
        expect({ template, bad, status: refused.status, param: refused.body?.error?.param }).toEqual({ template, bad, status: 400, param: "size" });
      }
      const page = (op.parameters as Schema[]).find((p) => p.name === "page");
      expect({ template, page: page?.schema }).toEqual({ template, page: { type: "integer", minimum: 1, default: 1 } });
      expect((await api(router, `${path}?page=0`)).status).toBe(400);
    }
    expect(checked.sort()).toEqual(["/dashboard/logs", "/x-dna", "/x-keys", "/x-news", "/x-requests", "/x-users"]);
    expect(operation("GET", "/dashboard/logs").parameters.find((p: Schema) => p.name === "size").schema.default).toBe(24);
  });

  test("days on the bills: 1 to 366 as declared", async () => {
    for (const template of ["/dashboard/bill", "/x-bill"]) {
      const days = operation("GET", template).parameters.find((p: Schema) => p.name === "days");
      expect(days.schema).toMatchObject({ type: "integer", minimum: 1, maximum: 366 });
      expect((await api(router, `${template}?days=366`)).status).toBe(200);
      expect((await api(router, `${template}?days=367`)).status).toBe(400);
      expect((await api(router, `${template}?days=0`)).status).toBe(400);
    }
  });
});

describe("query parameters: required ones and enumerations are declared as the router checks them", () => {
  // /x-route refuses a call without `model` (400), which the document declared optional;
  // `order` and `format` take fixed lists the document gave only in prose.
  test("GET /x-route declares model required, as a call without it is refused", async () => {
    const model = operation("GET", "/x-route").parameters.find((p: Schema) => p.name === "model");
    const refused = await api(router, "/x-route");
    expect({ status: refused.status, param: refused.body.error.param }).toEqual({ status: 400, param: "model" });
    expect(model.required).toBe(true);
    expect((await api(router, "/x-route?model=gpt-4o")).status).toBe(200);
  });

  test("each value an enumeration declares is accepted, and a value outside it is refused naming the parameter", async () => {
    const cases: Array<[string, string, string]> = [
      ["/x-users", "order", ""],
      ["/x-dna", "order", ""],
      ["/x-route", "format", "model=gpt-4o&"],
    ];
    for (const [template, name, base] of cases) {
      const values = operation("GET", template).parameters.find((p: Schema) => p.name === name).schema.enum as string[] | undefined;
      expect({ template, name, declared: Array.isArray(values) && values.length > 1 }).toEqual({ template, name, declared: true });
      for (const value of values!) expect({ template, value, status: (await api(router, `${template}?${base}${name}=${encodeURIComponent(value)}`)).status }).toEqual({ template, value, status: 200 });
      const refused = await api(router, `${template}?${base}${name}=sideways`);
      expect({ status: refused.status, param: refused.body.error.param }).toEqual({ status: 400, param: name });
    }
  });
});

/** A letter outside the Basic Multilingual Plane (MATHEMATICAL SCRIPT CAPITAL A): one character, two UTF-16 units. */
const ASTRAL = "\u{1D49C}";

/** No body at all (not even `{}`). */
const NO_BODY = Symbol("no body");

/** Whether the document calls `body` a valid request body of the operation. */
function validPerDocument(method: string, template: string, body: unknown): boolean {
  const requestBody = operation(method, template).requestBody;
  if (body === NO_BODY) return !requestBody?.required;
  return faults(doc, requestBody.content["application/json"].schema, body).length === 0;
}

describe("request bodies: one the document calls valid is accepted, one it calls invalid is refused with 400", () => {
  // POST /x-users was declared with the update body, where every field is optional, so a
  // generated client let Email (required, spec 2.2) and a negative CreditGranted
  // (refused at creation) through; DELETE /x-config and POST /x-config/test-mail were
  // declared to need a body the router does without (docs/api.md), and DELETE's
  // declared body took {} and {"keys": [...]} alike though only the second is accepted;
  // PUT /x-config's declared body was any object, {} and unknown items included.
  // The spec's lengths are characters ("4 to 63 characters", spec 8), as JSON Schema's
  // maxLength counts them, but the checks counted UTF-16 units: a Name of 40 letters
  // outside the Basic Multilingual Plane was refused as "at most 63 characters".
  test("each case: the router's verdict is the document's", async () => {
    const email = () => `openapi-${Math.random().toString(36).slice(2, 10)}@example.com`;
    const cases: Array<[string, string, unknown]> = [
      ["POST", "/x-users", {}],
      ["POST", "/x-users", { Name: "nobody-here" }],
      ["POST", "/x-users", { Email: email(), CreditGranted: -1 }],
      ["POST", "/x-users", { Email: email(), CreditGranted: 1, Rates: 1 }],
      ["POST", "/x-users", { Email: email(), Colour: "blue" }],
      // 40 and 60 characters outside the Basic Multilingual Plane (80 and 120 UTF-16 units).
      ["POST", "/x-users", { Email: email(), Name: `${ASTRAL.repeat(40)}`, Alias: ASTRAL.repeat(60) }],
      ["POST", "/x-users", { Email: email(), Name: `${ASTRAL.repeat(64)}` }],
      ["POST", "/x-keys", { ...KEY_BODY, Name: ASTRAL.repeat(60) }],
      ["POST", "/x-keys", { ...KEY_BODY, Name: ASTRAL.repeat(101) }],
      ["PUT", "/x-config", {}],
      ["PUT", "/x-config", { NOPE: "1" }],
      ["PUT", "/x-config", { XAI_MAIL: 5 }],
      ["PUT", "/x-config", { EMAIL_PORT: 2525, RESOURCES: ["*"], MODEL_MAPPER: { "gpt-4*": "gpt-4o" }, LEVEL_MAPPER: "*=1" }],
      ["PUT", "/x-config", { EMAIL_PORT: "2526" }],
      ["DELETE", "/x-config", NO_BODY],
      ["DELETE", "/x-config", {}],
      ["DELETE", "/x-config", { keys: ["XAI_MAIL"] }],
      ["DELETE", "/x-config", { keys: [] }],
      ["POST", "/x-self", {}],
      ["POST", "/x-self", { confirm: 5 }],
      ["POST", "/x-news", { title: "t", content: "c", days: 0 }],
      ["POST", "/x-news", { title: "t", content: "c" }],
      ["POST", "/x-keys", { ...KEY_BODY, Level: 0 }],
      ["POST", "/x-keys", { ...KEY_BODY, SecretKey: "short" }],
      ["POST", "/x-users/batch-credit", { IDs: [], CreditGranted: 1 }],
      ["POST", "/x-users/batch-credit", { IDs: [1], CreditGranted: 1, DryRun: true }],
    ];
    const wrong: string[] = [];
    for (const [method, template, body] of cases) {
      const reply = await router.fetch(template, { method, headers: { "content-type": "application/json" }, body: body === NO_BODY ? undefined : JSON.stringify(body) });
      const answer = (await reply.json()) as { error?: { type: string } };
      const accepted = reply.status < 300;
      if (!accepted && (reply.status !== 400 || answer.error?.type !== "invalid_request_error")) wrong.push(`${method} ${template} ${JSON.stringify(body)}: ${reply.status}`);
      if (accepted !== validPerDocument(method, template, body)) wrong.push(`${method} ${template} ${String(JSON.stringify(body))}: ${reply.status}, valid per document: ${!accepted}`);
    }
    expect(wrong).toEqual([]);
  });

  test("POST /x-config/test-mail without a body goes on to the mail settings (to the caller's own address)", async () => {
    const reply = await router.fetch("/x-config/test-mail", { method: "POST" });
    expect(((await reply.json()) as { error: { code: string } }).error.code).toBe("mail_not_configured");
    expect(validPerDocument("POST", "/x-config/test-mail", NO_BODY)).toBe(true);
  });
});

describe("sign-up (--signup): its paths are described where they are served", () => {
  // POST /x-signup and POST /x-signup/confirm are management paths (docs/api.md: the
  // document covers every /x-* path) served with --signup, but the document, built once
  // for every configuration, never listed them: an integrator building a sign-up page
  // from it had no operation, body or answer to go by.
  test("with --signup both are described, without a key, and answer as declared; without it neither is", async () => {
    const byok = await startRouter({ config: { byok: true, signup: true } });
    try {
      const described = (await (await fetch(`${byok.url}/openapi.json`)).json()) as OpenApi;
      const signup = described.paths["/x-signup"]?.post;
      const confirm = described.paths["/x-signup/confirm"]?.post;
      expect({ signup: signup !== undefined, confirm: confirm !== undefined }).toEqual({ signup: true, confirm: true });
      for (const op of [signup!, confirm!]) expect(op.security).toEqual([]);
      // No account holds a sign-up's Idempotency-Key: the header is ignored there (docs/api.md).
      for (const op of [signup!, confirm!]) expect((op.parameters as Schema[]).map((p) => p.name)).not.toContain("Idempotency-Key");
      const check = (op: Schema, status: number, body: unknown) =>
        faults(described, (op.responses[String(status)] ?? op.responses.default).content["application/json"].schema, body);
      const bodySchema = signup!.requestBody.content["application/json"].schema;
      const good = { Email: `signup-${Date.now()}@example.com`, Name: "tenant-one" };
      expect(faults(described, bodySchema, good)).toEqual([]);
      expect(faults(described, bodySchema, { Name: "tenant-two" })).not.toEqual([]);
      const created = await api(byok, "/x-signup", { body: good, key: null });
      expect(created.status).toBe(201);
      expect(check(signup!, 201, created.body)).toEqual([]);
      const refused = await api(byok, "/x-signup", { body: { Name: "tenant-two" }, key: null });
      expect(refused.status).toBe(400);
      expect(check(signup!, 400, refused.body)).toEqual([]);
      const unknown = await api(byok, "/x-signup/confirm", { body: { token: "no-such-token" }, key: null });
      expect(unknown.status).toBe(404);
      expect(check(confirm!, 404, unknown.body)).toEqual([]);
      // The routes this app serves are those described for its configuration, no more, no fewer.
      const served = createApp(byok.deps).routes.map((route) => `${route.method} ${route.path}`).filter((route) => / \/(x-|dashboard|healthz|readyz|metrics|openapi)/.test(route));
      expect(served.sort()).toEqual(describedRoutes(byok.deps.config).sort());
    } finally {
      await byok.stop();
    }
    expect(doc.paths["/x-signup"]).toBeUndefined();
    // With --signup-smtp the sign-up answers 202 (a token mailed), and only the confirmation creates.
    const mailed = openApiDocument("0", { signup: true, signupSmtp: "smtp://mail.example.com:587" }) as OpenApi;
    // (Its error answers are declared beside it since: review-openapi2.test.ts.)
    expect(Object.keys(mailed.paths["/x-signup"]!.post!.responses).filter((status) => /^2\d\d$/.test(status))).toEqual(["202"]);
  });
});

describe("the document's own structure", () => {
  // No operation had an operationId: generators then name methods from the path and
  // method (getXUsersIdentifier, postXKeysIdSleep), names that change whenever a path is
  // reworded, so every regenerated client broke its callers.
  test("every operation has an operationId, unique and usable as a method name", () => {
    const ids = operations().map(({ method, template, op }) => [`${method} ${template}`, op.operationId] as const);
    expect(ids.filter(([, id]) => typeof id !== "string" || !/^[a-z][A-Za-z0-9]*$/.test(id))).toEqual([]);
    expect(new Set(ids.map(([, id]) => id)).size).toBe(ids.length);
  });

  test("valid OpenAPI 3.1 in outline, every reference resolving, no secret or machine path, the same after a restart", async () => {
    expect(doc).toMatchObject({ openapi: "3.1.0", info: { title: expect.any(String), version: expect.any(String) } });
    expect(doc.components.securitySchemes).toEqual({ apiKey: { type: "http", scheme: "bearer" } });
    const text = JSON.stringify(doc);
    for (const [, pointer] of text.matchAll(/"\$ref":"#\/([^"]+)"/g)) {
      const target = pointer!.split("/").reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], doc);
      expect({ pointer, resolves: target !== undefined }).toEqual({ pointer, resolves: true });
    }
    for (const { method, template, op } of operations()) {
      const pathParams = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      const declaredPath = (op.parameters as Schema[]).filter((p) => p.in === "path").map((p) => p.name);
      expect({ op: `${method} ${template}`, params: declaredPath }).toEqual({ op: `${method} ${template}`, params: pathParams });
      expect(Object.keys(op.responses).some((status) => /^2\d\d$/.test(status))).toBe(true);
    }
    expect(text).not.toContain(router.ownerKey);
    expect(text).not.toContain(router.dataDir);
    expect(text).not.toMatch(/sk-rt-[A-Za-z0-9]{10}/);
    const again = await startRouter();
    try {
      expect(await (await fetch(`${again.url}/openapi.json`)).json()).toEqual(doc);
    } finally {
      await again.stop();
    }
  });
});

describe("health: /healthz and /readyz answers are declared, the readiness 503 included", () => {
  // /readyz answers 503 {"status":"stopping"|"unavailable","database","redis"} for a load
  // balancer, but the document declared only 200 (an untyped object) and, for every other
  // status, the error envelope: a generated health check failed to read the 503 it exists for.
  test("ready, then stopping: each answer keeps to the schema declared for its status", async () => {
    const ready = await answerFaults("GET", "/readyz", "/readyz", { key: null });
    expect({ status: ready.status, faults: ready.faults }).toEqual({ status: 200, faults: [] });
    const health = await answerFaults("GET", "/healthz", "/healthz", { key: null });
    expect({ status: health.status, faults: health.faults }).toEqual({ status: 200, faults: [] });
    // Both are real schemas, not "any object".
    expect(faults(doc, declared("GET", "/healthz", 200)!.content["application/json"].schema, { anything: 1 })).not.toEqual([]);
    router.deps.lifecycle.stopping = true;
    try {
      const stopping = await answerFaults("GET", "/readyz", "/readyz", { key: null });
      expect({ status: stopping.status, body: stopping.body.status, faults: stopping.faults }).toEqual({ status: 503, body: "stopping", faults: [] });
      expect(operation("GET", "/readyz").responses["503"]).toBeDefined();
    } finally {
      router.deps.lifecycle.stopping = false;
    }
  });
});

describe("response headers integrators rely on are declared", () => {
  // Every answer carries X-Request-Id, the id GET /x-requests/{request_id} and the logs
  // are keyed by, and a write replayed under its Idempotency-Key says so with
  // Idempotent-Replayed: true; the document declared neither, so a generated client
  // dropped both.
  test("X-Request-Id on every answer, success and error; Idempotent-Replayed on the writes that take an Idempotency-Key", async () => {
    const requestIdOf = (response: Schema) => (response.headers?.["X-Request-Id"]?.$ref ? doc.components.headers["X-Request-Id"] : response.headers?.["X-Request-Id"]);
    const wrong: string[] = [];
    for (const { method, template, op } of operations()) {
      for (const [status, response] of Object.entries(op.responses as Record<string, Schema>)) {
        if (!requestIdOf(response)) wrong.push(`${method} ${template} ${status}: no X-Request-Id`);
      }
      const takesKey = (op.parameters as Schema[]).some((p) => p.name === "Idempotency-Key");
      const success = Object.entries(op.responses as Record<string, Schema>).find(([status]) => /^2/.test(status))![1];
      if (takesKey !== Boolean(success.headers?.["Idempotent-Replayed"])) wrong.push(`${method} ${template}: Idempotent-Replayed ${takesKey ? "not declared" : "declared without the key"}`);
    }
    expect(wrong).toEqual([]);
    const pattern = new RegExp(requestIdOf(operation("GET", "/x-users").responses["200"]).schema.pattern);
    for (const path of ["/x-users", "/x-keys/987654", "/openapi.json"]) expect((await router.fetch(path)).headers.get("x-request-id")).toMatch(pattern);
    for (const path of ["/healthz", "/readyz", "/metrics"]) expect((await router.fetch(path)).headers.get("x-request-id")).toMatch(pattern);
    const key = `openapi-${Date.now()}`;
    const again = () => router.fetch("/x-news", { method: "POST", headers: { "content-type": "application/json", "idempotency-key": key }, body: JSON.stringify({ title: "replayed", content: "once" }) });
    const first = await again();
    expect({ status: first.status, replayed: first.headers.get("idempotent-replayed") }).toEqual({ status: 201, replayed: null });
    expect((await again()).headers.get("idempotent-replayed")).toBe("true");
  });
});

describe("path parameters: a provider key's id is declared an integer, as the router reads it", () => {
  // /x-keys/{id} refuses an id that is not a positive integer (400 naming id), but the
  // document declared every path parameter a string: a typed client took any text.
  test("the declared schema, and what the router says to text", async () => {
    for (const [method, template] of [["GET", "/x-keys/{id}"], ["PUT", "/x-keys/{id}"], ["DELETE", "/x-keys/{id}"], ["POST", "/x-keys/{id}/sleep"], ["POST", "/x-keys/{id}/wake"], ["POST", "/x-keys/{id}/test"]] as const) {
      const id = operation(method, template).parameters.find((p: Schema) => p.in === "path");
      expect({ template, method, schema: id.schema }).toEqual({ template, method, schema: { type: "integer", minimum: 1 } });
    }
    const refused = await api(router, "/x-keys/first");
    expect({ status: refused.status, param: refused.body.error.param }).toEqual({ status: 400, param: "id" });
  });
});

describe("who may call: the descriptions say what the router checks", () => {
  // A manager whose Resources allow /x-users but not /x-bill or /x-route is refused
  // there (403 resource_not_allowed), while the document said those operations were for
  // "an account that manages accounts", no more.
  test("a manager without the path in its Resources is refused, and each keyed operation says the path must be allowed", async () => {
    const manager = await createAccount(router, { Resources: MANAGER_RESOURCES });
    for (const path of ["/x-bill", "/x-route?model=gpt-4o"]) {
      const refused = await api(router, path, { key: manager.key });
      expect({ path, status: refused.status, code: refused.body.error.code }).toEqual({ path, status: 403, code: "resource_not_allowed" });
    }
    const wrong = operations()
      .filter(({ op }) => !anonymousAllowed(op) || (op.security ?? []).length > 1)
      .filter(({ template, op }) => template !== "/metrics" && !/^Owner accounts only/.test(op.description) && !/Resources allow the path/.test(op.description))
      .map(({ method, template }) => `${method} ${template}`);
    expect(wrong).toEqual([]);
  });
});

describe("list filters: level is the account's Level, as the records show it", () => {
  // The document described the level filter of /x-users and /x-dna as the "depth below
  // the caller", but it matches the records' Level (owners are 1): a manager at Level 2
  // asking for its children with level=1 got nothing.
  test("a manager's grandchild is found with its own Level, and the description says so", async () => {
    const manager = await createAccount(router, { Resources: MANAGER_RESOURCES });
    const child = await createAccount(router, { Resources: MANAGER_RESOURCES }, manager.key);
    const grandchild = await createAccount(router, {}, child.key);
    const found = await api(router, "/x-dna?level=4", { key: manager.key });
    expect(found.body.map((a: { ID: number; Level: number }) => [a.ID, a.Level])).toEqual([[grandchild.id, 4]]);
    expect((await api(router, "/x-dna?level=2", { key: manager.key })).body).toEqual([]);
    for (const template of ["/x-users", "/x-dna"]) {
      const level = operation("GET", template).parameters.find((p: Schema) => p.name === "level");
      expect({ template, description: level.description }).toEqual({ template, description: expect.stringMatching(/Level.*owners are 1/) });
      expect(level.schema).toMatchObject({ type: "integer", minimum: 1 });
    }
  });
});

describe("integer query parameters: the declared minimum is the one the router holds to", () => {
  // Integer filters (an ID, a Level, a key) refuse 0 with 400 naming the parameter, but
  // most were declared as any integer.
  test("0 is refused exactly where the document declares minimum 1", async () => {
    const wrong: string[] = [];
    for (const { method, template, op } of operations()) {
      if (method !== "GET" || template.includes("{")) continue;
      for (const param of (op.parameters as Schema[]).filter((p) => p.in === "query" && p.schema.type === "integer")) {
        const base = template === "/x-route" ? "model=gpt-4o&" : "";
        const reply = await api(router, `${template}?${base}${param.name}=0`);
        const refused = reply.status === 400 && reply.body.error.param === param.name;
        if (refused !== (param.schema.minimum === 1)) wrong.push(`${template} ${param.name}=0: ${reply.status}, declared minimum ${param.schema.minimum}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe("bill dates: declared as dates, as the router reads them", () => {
  // date, start and end take a calendar date (YYYY-MM-DD; 2025-02-30 is refused), but
  // were declared as any string.
  test("format date, a real date accepted and an impossible one refused naming the parameter", async () => {
    for (const template of ["/dashboard/bill", "/x-bill"]) {
      for (const name of ["date", "start", "end"]) {
        const param = operation("GET", template).parameters.find((p: Schema) => p.name === name);
        expect({ template, name, schema: param.schema }).toEqual({ template, name, schema: { type: "string", format: "date" } });
      }
      expect((await api(router, `${template}?date=2025-02-28`)).status).toBe(200);
      const refused = await api(router, `${template}?date=2025-02-30`);
      expect({ status: refused.status, param: refused.body.error.param }).toEqual({ status: 400, param: "date" });
    }
  });
});

describe("closed bodies: every body the document closes (additionalProperties false) refuses an unknown field naming it", () => {
  test("each operation with such a body", async () => {
    const checked: string[] = [];
    for (const { method, template, path, op } of operations()) {
      let schema = op.requestBody?.content["application/json"].schema as Schema | undefined;
      if (schema?.$ref) schema = doc.components.schemas[String(schema.$ref).split("/").pop()!];
      if (schema?.additionalProperties !== false || template.startsWith("/x-signup")) continue;
      checked.push(`${method} ${template}`);
      const reply = await api(router, path.replace("/x-users/1", "/x-users/999999"), { method, body: { Colour: "blue" } });
      // A body missing a required field may be refused for that first (POST /x-keys names what creation needs).
      const named = reply.body?.error?.param;
      expect({ op: `${method} ${template}`, status: reply.status, named: named === "Colour" || (schema.required ?? []).includes(named) }).toEqual({ op: `${method} ${template}`, status: 400, named: true });
    }
    expect(checked.length).toBeGreaterThan(8);
  });
});

describe("answers after real traffic keep to their declared schemas (checked, found right)", () => {
  // Lists and reports are empty on a fresh router, where an item schema cannot be wrong:
  // here calls were made (one failing over to a second key), credit granted, a notice sent.
  // Priced here: an earlier test reset PRICING (DELETE /x-config without a body).
  test("every read, as the owner, a manager and its account", async () => {
    const upstream = startMockUpstream();
    let calls = 0;
    upstream.route("POST", "/v1/chat/completions", () => (++calls === 2 ? json({ error: { message: "busy" } }, 500) : chatCompletion("gpt-4o", { prompt: 7, completion: 3 })));
    try {
      await addKey(router, { provider: `${upstream.url}/v1`, name: "first", level: 7 });
      await addKey(router, { provider: `${upstream.url}/v1`, name: "second", level: 8 });
      expect((await api(router, "/x-config", { method: "PUT", body: { LEVEL_MAPPER: "traffic-*=7", SWITCH_OVER: "7=8", PRICING: { ChatPricing: { "traffic-*": { InputText: 1, OutputText: 2 } } } } })).status).toBe(200);
      const manager = await createAccount(router, { Resources: `${MANAGER_RESOURCES},/x-bill,/x-route,/x-requests*`, CreditGranted: 10 });
      const account = await createAccount(router, { CreditGranted: 2, Days: 5 }, manager.key);
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push(await chatRequestId(router, account.key, "traffic-model"));
      await router.deps.usageRecorder.flush();
      expect((await api(router, "/x-news", { body: { title: "hello", content: "world", target: account.id }, key: manager.key })).status).toBe(201);
      const reads: Array<[string, string, string[]]> = [
        ["/dashboard/status", "/dashboard/status", ["owner", "manager", "account"]],
        ["/dashboard/credit", "/dashboard/credit", ["manager", "account"]],
        ["/dashboard/info", "/dashboard/info", ["owner", "account"]],
        ["/dashboard/live", "/dashboard/live", ["manager", "account"]],
        ["/dashboard/bill", "/dashboard/bill?days=2", ["account"]],
        ["/dashboard/news", "/dashboard/news", ["account"]],
        ["/dashboard/logs", "/dashboard/logs", ["owner"]],
        ["/x-bill", "/x-bill", ["owner", "manager"]],
        ["/x-users", "/x-users", ["manager"]],
        ["/x-dna", "/x-dna", ["owner"]],
        ["/x-requests", "/x-requests", ["owner", "manager", "account"]],
        ["/x-route", "/x-route?model=traffic-model", ["owner", "manager"]],
        ["/x-keys", "/x-keys?fields=overview", ["owner"]],
        ["/x-news", "/x-news", ["manager"]],
        ["/x-pricing", "/x-pricing", ["account"]],
      ];
      const keyOf: Record<string, string> = { owner: router.ownerKey, manager: manager.key, account: account.key };
      const wrong: string[] = [];
      for (const [template, path, callers] of reads) {
        for (const caller of callers) {
          const answer = await answerFaults("GET", template, path, { key: keyOf[caller] });
          if (answer.status !== 200 || answer.faults.length > 0) wrong.push(`${path} as ${caller}: ${answer.status} ${answer.faults.slice(0, 3).join("; ")}`);
        }
      }
      for (const id of ids) {
        for (const caller of ["owner", "manager", "account"]) {
          const answer = await answerFaults("GET", "/x-requests/{request_id}", `/x-requests/${id}`, { key: keyOf[caller] });
          if (answer.status !== 200 || answer.faults.length > 0) wrong.push(`request ${id} as ${caller}: ${answer.status} ${answer.faults.slice(0, 3).join("; ")}`);
        }
      }
      expect(wrong).toEqual([]);
      // The traffic was what the test meant: a failover, and usage in the bill.
      const failed = await api(router, `/x-requests/${ids[1]}`);
      expect(failed.body.attempts.length).toBe(2);
      expect((await api(router, "/dashboard/bill", { key: account.key })).body.total_requests).toBe(3);
    } finally {
      await upstream.stop();
    }
  });
});
