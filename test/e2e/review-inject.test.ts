import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { runBinary } from "../helpers/binary-command.ts";
import { addKey } from "../helpers/keys.ts";
import { chatCompletion, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { api, chatRequestId, createAccount } from "../helpers/owner-ops.ts";
import { startRouter, waitFor, type TestRouter } from "../helpers/router.ts";

// Text one party controls reaching another party's screen, terminal or upstream: what
// a client's headers may carry to the provider on the owner's key, what an account may
// call itself, and what the CLI's tables print of a client's model name. The CLI runs
// as the built executable (`bun scripts/build.ts` first).

let router: TestRouter;
let upstream: MockUpstream;

beforeAll(async () => {
  upstream = startMockUpstream();
  router = await startRouter();
  await addKey(router, { provider: `${upstream.url}/v1` });
});
afterAll(async () => {
  await router.stop();
  await upstream.stop();
});
beforeEach(() => {
  upstream.reset();
  upstream.route("POST", "/v1/chat/completions", (req) => chatCompletion(req.json.model, { prompt: 3, completion: 2 }, { id: "chatcmpl-1", content: "hello" }));
});

describe("client headers that would act on the owner's provider account never travel upstream", () => {
  test("x-goog-user-project and the method-override headers are dropped; ordinary headers still go", async () => {
    const res = await router.fetch("/v1/chat/completions", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-goog-user-project": "someone-elses-project",
        "x-http-method-override": "DELETE",
        "x-http-method": "DELETE",
        "x-method-override": "DELETE",
        "openai-organization": "org-client",
        "openai-beta": "assistants=v2",
      },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    await res.text();
    const seen = upstream.requests[0]!.headers;
    for (const name of ["x-goog-user-project", "x-http-method-override", "x-http-method", "x-method-override", "openai-organization"]) {
      expect({ name, value: seen.get(name) }).toEqual({ name, value: null });
    }
    expect(seen.get("openai-beta")).toBe("assistants=v2");
  });
});

describe("what an account may call itself", () => {
  const refused = async (fields: Record<string, unknown>, field: string) => {
    const res = await api(router, "/x-users", { body: { Email: `n${Math.random().toString(36).slice(2, 8)}@example.com`, ...fields } });
    expect({ status: res.status, param: res.body?.error?.param }).toEqual({ status: 400, param: field });
    return res.body.error.message as string;
  };

  test("a Name with a bidirectional override or a zero-width space is refused: it would read as another name", async () => {
    // "\u202Enimda" is shown as "admin"; "ann-x\u200B" looks like "ann-x".
    expect(await refused({ Name: "\u202Enimda" }, "Name")).toContain("bidirectional");
    await refused({ Name: "bob-\u2066x\u2069" }, "Name");
    await refused({ Name: "ann-x\u200B" }, "Name");
    await refused({ Name: "\uFEFFcarol" }, "Name");
    // Scripts that need joiners keep them: Persian's ZWNJ, an emoji's ZWJ.
    const persian = await api(router, "/x-users", { body: { Email: "fa@example.com", Name: "می\u200Cخواهم" } });
    expect(persian.status).toBe(201);
  });

  test("an Email with a bidirectional override or an invisible character in its local part is refused", async () => {
    await refused({ Email: "moc.evil\u202E@example.com" }, "Email");
    await refused({ Email: "ann\u200B@example.com" }, "Email");
    await refused({ Email: "ann@example.com", BillingEmail: "bills\u2067@example.com" }, "BillingEmail");
    const unicode = await api(router, "/x-users", { body: { Email: "josé@example.com" } });
    expect(unicode.status).toBe(201);
  });

  test("an Alias with control characters or bidirectional controls is refused, naming Alias; spaces and any script stay", async () => {
    expect(await refused({ Alias: "Ann\nOwner: yes" }, "Alias")).toContain("Alias");
    await refused({ Alias: "Ann \u001b]8;;https://evil.example\u0007click\u001b]8;;\u0007" }, "Alias");
    await refused({ Alias: "Ann\u202Egnp.exe" }, "Alias");
    const account = await createAccount(router, { Alias: "Ann Lee 李安 ✓" });
    const update = await api(router, `/x-users/${account.id}`, { method: "PUT", body: { Alias: "x\r\ny" } });
    expect({ status: update.status, param: update.body?.error?.param }).toEqual({ status: 400, param: "Alias" });
    const shown = await api(router, `/x-users/${account.id}`);
    expect(shown.body.Alias).toBe("Ann Lee 李安 ✓");
  });
});

describe("router requests (the built executable): a client's model name cannot rearrange the owner's terminal", () => {
  test("bidirectional controls in a model name are not printed; the name's letters are", async () => {
    const client = await createAccount(router);
    const model = "gpt\u202Eevil\u2066x\u2069\u200Fmini";
    const id = await chatRequestId(router, client.key, model);
    await waitFor(async () => (await api(router, `/x-requests/${id}`)).status === 200, 5000, "the call's record");
    const result = await runBinary(["requests", "--request-id", id], { ROUTER_URL: router.url, ROUTER_KEY: router.ownerKey });
    expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: "" });
    expect(result.stdout).toContain("gptevilxmini");
    expect(result.stdout).not.toMatch(/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
  });
});
