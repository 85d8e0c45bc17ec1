import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

// Text one party controls reaching another party's screen, terminal or upstream: what
// a client's headers may carry to the provider on the owner's key, what an account may
// call itself, and what the CLI's tables print of a client's model name. The CLI runs
// as the built executable (`bun scripts/build.ts` first).

let router: TestRouter;
let upstream: MockUpstream;

const answer = (model: string) =>
  json({
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }],
    usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
  });

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
  upstream.route("POST", "/v1/chat/completions", (req) => answer(req.json.model));
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
