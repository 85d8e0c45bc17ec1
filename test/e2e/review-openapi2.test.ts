import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { api, createAccount, type CreatedAccount } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { createServer, type AddressInfo } from "node:net";
import { openApiDocument } from "../../src/wire/openapi.ts";
import { TEST_MAILS_PER_HOUR } from "../../src/admin/config/test-mail.ts";

/**
 * Review of the error answers /openapi.json declares per operation. Integrators generate
 * clients from the document; with every error under `default` they could not tell a 404
 * from a 409 in the types, nor which operations can answer 403 or 413. Each status
 * declared for a sample of operations is provoked here for real and its body checked
 * against the declared schema, and statuses an operation cannot answer are not declared.
 */

type Schema = Record<string, any>;
type OpenApi = { paths: Record<string, Record<string, Schema>>; components: { schemas: Record<string, Schema>; headers?: Record<string, Schema> } };

let router: TestRouter;
let doc: OpenApi;
let plain: CreatedAccount;
beforeAll(async () => {
  // A small --max-body, so that a 413 needs no large upload.
  router = await startRouter({ config: { maxBody: 4096 } });
  doc = (await (await fetch(`${router.url}/openapi.json`)).json()) as OpenApi;
  // An ordinary account whose Resources open model calls only.
  plain = await createAccount(router, { Resources: "/v1/*" });
});
afterAll(() => router?.stop());

/** Where `value` breaks `schema`: the keywords the error envelope's schema uses ($ref, type, properties, required). */
function faults(schema: Schema, value: unknown, path = "$"): string[] {
  if (schema.$ref) return faults(doc.components.schemas[String(schema.$ref).split("/").pop()!] ?? { not: true }, value, path);
  if (schema.not) return [`${path}: unresolved`];
  const actual = value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
  if (schema.type && ![schema.type].flat().includes(actual)) return [`${path}: ${actual} is not ${schema.type}`];
  const out: string[] = [];
  if (actual === "object") {
    const object = value as Record<string, unknown>;
    for (const name of schema.required ?? []) if (!(name in object)) out.push(`${path}.${name}: missing`);
    for (const [name, sub] of Object.entries(schema.properties ?? {})) if (name in object) out.push(...faults(sub as Schema, object[name], `${path}.${name}`));
  }
  return out;
}

const declaredErrors = (method: string, template: string) =>
  Object.keys(doc.paths[template]![method.toLowerCase()]!.responses).filter((status) => /^[45]\d\d$/.test(status)).map(Number);

const WRONG_KEY = "sk-rt-thisisnotakeythisrouterknows0000";

describe("error answers: each status declared for an operation is one the router answers there, in the declared envelope", () => {
  test("a sample of operations: every declared error but 503 (database away) provoked, each body matching its declared schema", async () => {
    const other = await createAccount(router);
    const target = await createAccount(router);
    const json = { "content-type": "application/json" };
    const key = await api(router, "/x-keys", { body: { Provider: "https://api.example.com/v1", SecretKey: "sk-openapi2-0123456789abcdef", Level: 1, Status: true } });
    expect(key.status).toBe(201);
    const sample: Record<string, Record<number, () => Promise<{ status: number; body: unknown }>>> = {
      "GET /dashboard/status": {
        401: () => api(router, "/dashboard/status", { key: WRONG_KEY }),
        403: () => api(router, "/dashboard/status", { key: plain.key }),
      },
      "GET /x-keys/{id}": {
        400: () => api(router, `/x-keys/${key.body.ID}?fields=masked`),
        401: () => api(router, "/x-keys/1", { key: null }),
        403: () => api(router, "/x-keys/1", { key: plain.key }),
        404: () => api(router, "/x-keys/999999"),
      },
      "GET /x-route": {
        400: () => api(router, "/x-route"),
        401: () => api(router, "/x-route?model=gpt-4o", { key: WRONG_KEY }),
        403: () => api(router, "/x-route?model=gpt-4o", { key: plain.key }),
        404: () => api(router, "/x-route?model=gpt-4o&account=nobody-at-all"),
      },
      "PUT /x-users/{identifier}": {
        400: () => api(router, `/x-users/${target.id}`, { method: "PUT", body: { CreditGranted: "lots" } }),
        401: () => api(router, `/x-users/${target.id}`, { method: "PUT", body: { Name: "renamed" }, key: WRONG_KEY }),
        403: () => api(router, `/x-users/${target.id}`, { method: "PUT", body: { Name: "renamed" }, key: plain.key }),
        404: () => api(router, "/x-users/999999", { method: "PUT", body: { Name: "renamed" } }),
        409: () => api(router, `/x-users/${target.id}`, { method: "PUT", body: { Email: other.email } }),
        413: () => api(router, `/x-users/${target.id}`, { method: "PUT", body: { Remark: "x".repeat(8192) } }),
        422: async () => {
          const send = (Name: string) => router.fetch(`/x-users/${target.id}`, { method: "PUT", headers: { ...json, "idempotency-key": "openapi2-reuse" }, body: JSON.stringify({ Name }) });
          expect((await send("first-name")).status).toBe(200);
          const reply = await send("second-name");
          return { status: reply.status, body: await reply.json() };
        },
      },
    };
    const wrong: string[] = [];
    for (const [operation, provokers] of Object.entries(sample)) {
      const [method, template] = operation.split(" ") as [string, string];
      const responses = doc.paths[template]![method.toLowerCase()]!.responses;
      // The sample provokes every status declared for the operation (503 needs PostgreSQL stopped: resilience tests).
      expect({ operation, declared: declaredErrors(method, template).filter((s) => s !== 503) }).toEqual({ operation, declared: Object.keys(provokers).map(Number) });
      for (const [status, provoke] of Object.entries(provokers)) {
        const reply = await provoke();
        const schema = responses[status]?.content?.["application/json"]?.schema;
        if (reply.status !== Number(status)) wrong.push(`${operation}: provoked ${reply.status}, expected ${status}`);
        else if (!schema) wrong.push(`${operation}: ${status} is not declared`);
        else wrong.push(...faults(schema, reply.body).map((f) => `${operation} ${status}: ${f}`));
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe("error answers: no operation declares a status it cannot answer", () => {
  const every = () => Object.entries(doc.paths).flatMap(([template, methods]) => Object.entries(methods).map(([method, op]) => ({ method: method.toUpperCase(), template, op })));

  test("the open operations declare neither 401 nor 403, and answer neither to a key whose Resources leave them out", async () => {
    const open = every().filter(({ op }) => Array.isArray(op.security) && op.security.length === 0);
    expect(open.map(({ template }) => template).sort()).toEqual(["/healthz", "/openapi.json", "/readyz"]);
    for (const { method, template } of open) {
      expect({ template, declared: declaredErrors(method, template).filter((s) => s === 401 || s === 403) }).toEqual({ template, declared: [] });
      const reply = await api(router, template, { key: plain.key });
      expect({ template, status: reply.status }).toEqual({ template, status: 200 });
    }
  });

  test("an operation without parameters or body declares no 400, and ignores a query it does not read", async () => {
    const bare = every().filter(({ op }) => !op.requestBody && (op.parameters as Schema[]).length === 0);
    expect(bare.length).toBeGreaterThan(5);
    for (const { method, template } of bare) {
      expect({ template, declares400: declaredErrors(method, template).includes(400) }).toEqual({ template, declares400: false });
      if (method !== "GET" || template === "/metrics") continue;
      const reply = await api(router, `${template}?size=abc&page=-1&days=x&bogus=1`);
      expect({ template, status: reply.status }).toEqual({ template, status: 200 });
    }
  });

  test("413 exactly where a body is read, 422 exactly where an Idempotency-Key is taken, 404 only where something is named", () => {
    for (const { method, template, op } of every()) {
      const errors = declaredErrors(method, template);
      const idempotent = (op.parameters as Schema[]).some((p) => p.name === "Idempotency-Key");
      const names = (op.parameters as Schema[]).some((p) => p.in === "path" || ["account", "user"].includes(p.name));
      expect({ template, method, has413: errors.includes(413), has422: errors.includes(422) }).toEqual({ template, method, has413: op.requestBody !== undefined, has422: idempotent });
      if (errors.includes(404)) expect({ template, names: names || template === "/x-requests" }).toEqual({ template, names: true });
      // Every error the document declares has the envelope (but /readyz's 503, its Readiness answer).
      for (const status of errors) if (!(template === "/readyz" && status === 503)) expect(op.responses[status].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Error" });
    }
  });

  test("every operation: a wrong key, a key its Resources leave out, a malformed and an unknown path id each get a status declared there", async () => {
    const undeclared: string[] = [];
    for (const { method, template, op } of every()) {
      const body = method === "GET" ? undefined : {};
      const probes: Array<[string, string | null | undefined]> = [
        [template.replace(/\{\w+\}/g, "999999"), WRONG_KEY],
        [template.replace(/\{\w+\}/g, "999999"), plain.key],
        [template.replace(/\{\w+\}/g, "not-a-number"), undefined],
        [template.replace(/\{\w+\}/g, "999999"), undefined],
      ];
      for (const [path, key] of probes) {
        const reply = await api(router, path, { method, key, body });
        const entry = op.responses[reply.status];
        if (!entry) undeclared.push(`${method} ${path}: ${reply.status} (declares ${Object.keys(op.responses)})`);
        else if (reply.status >= 400 && template !== "/readyz") undeclared.push(...faults(entry.content["application/json"].schema, reply.body).map((f) => `${method} ${path}: ${f}`));
      }
    }
    expect(undeclared).toEqual([]);
  });

  test("/x-requests declares its 404, answered when the request log is off", async () => {
    expect(declaredErrors("GET", "/x-requests")).toContain(404);
    const off = await startRouter({ config: { requestLogDays: 0 } });
    try {
      const reply = await api(off, "/x-requests");
      expect(reply.status).toBe(404);
      expect(faults({ $ref: "#/components/schemas/Error" }, reply.body)).toEqual([]);
    } finally {
      await off.stop();
    }
  });
});

describe("error answers of the operations that send mail", () => {
  // POST /x-config/test-mail answers 502 when the mail server fails (docs/api.md) and 429
  // past its hourly bound; the first was left to `default`, so a generated client typed
  // the console's most common test-mail outcome as an unknown error.
  test("POST /x-config/test-mail: a mail server that refuses the connection is its declared 502, the hourly bound its declared 429", async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    const closed = (server.address() as AddressInfo).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    expect((await api(router, "/x-config", { method: "PUT", body: { EMAIL_SMTP: "127.0.0.1", EMAIL_PORT: closed, XAI_MAIL: "router@example.com" } })).status).toBe(200);
    const responses = doc.paths["/x-config/test-mail"]!.post!.responses;
    const seen = new Set<number>();
    for (let i = 0; i <= TEST_MAILS_PER_HOUR; i++) {
      const reply = await api(router, "/x-config/test-mail", { body: { to: "a@example.com" } });
      seen.add(reply.status);
      expect({ status: reply.status, declared: responses[reply.status] !== undefined }).toEqual({ status: reply.status, declared: true });
      expect(faults(responses[reply.status].content["application/json"].schema, reply.body)).toEqual([]);
    }
    expect([...seen].sort()).toEqual([429, 502]);
    // The 429 says when to try again, and the document declares that header on it.
    const limited = await router.fetch("/x-config/test-mail", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ to: "a@example.com" }) });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(Object.keys(responses["429"].headers)).toEqual(["X-Request-Id", "Retry-After"]);
    expect(doc.components.headers?.["Retry-After"]).toBeDefined();
  });

  test("POST /x-signup declares 502 (the mail not sent) only when it sends one (--signup-smtp)", () => {
    const errors = (config: Parameters<typeof openApiDocument>[1]) => Object.keys((openApiDocument("0", config) as OpenApi).paths["/x-signup"]!.post!.responses);
    expect(errors({ signup: true, signupSmtp: "smtp://mail.example.com:587" })).toContain("502");
    expect(errors({ signup: true })).not.toContain("502");
  });
});

describe("error answers of the writes that take an Idempotency-Key", () => {
  // A malformed Idempotency-Key is refused with 400 naming the header on every such write,
  // but writes without a body or query (DELETE /x-users/{identifier}, DELETE /x-news/{id},
  // POST /x-keys/{id}/... took a query) did not declare 400 at all.
  test("every write taking the header: a malformed key is a declared 400 naming it", async () => {
    const wrong: string[] = [];
    for (const [template, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        if (!(op.parameters as Schema[]).some((p) => p.name === "Idempotency-Key")) continue;
        const path = template.replace(/\{\w+\}/g, "999999");
        const reply = await router.fetch(path, { method: method.toUpperCase(), headers: { "content-type": "application/json", "idempotency-key": "has space" }, body: method === "delete" ? undefined : "{}" });
        const body = (await reply.json()) as { error?: { param?: string } };
        const entry = op.responses[reply.status];
        if (reply.status !== 400 || body.error?.param !== "Idempotency-Key") wrong.push(`${method} ${template}: ${reply.status} ${JSON.stringify(body)}`);
        else if (!entry) wrong.push(`${method} ${template}: 400 not declared`);
        else wrong.push(...faults(entry.content["application/json"].schema, body).map((f) => `${method} ${template}: ${f}`));
      }
    }
    expect(wrong).toEqual([]);
  });
});
