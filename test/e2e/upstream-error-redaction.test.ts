import { afterEach, expect, test } from "bun:test";
import { addKey } from "../helpers/keys.ts";
import { json, startMockUpstream, type MockUpstream } from "../helpers/mock-upstream.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";
import { openaiClient } from "../helpers/sdk.ts";

const mocks: MockUpstream[] = [];
const routers: TestRouter[] = [];
afterEach(async () => {
  for (const mock of mocks.splice(0)) await mock.stop();
  for (const router of routers.splice(0)) await router.stop();
});

test("an upstream 400 that echoes the key's secret, plain, base64 or URL-encoded, reaches the client without any of them", async () => {
  const router = await startRouter();
  routers.push(router);
  // A secret no generic key pattern would catch.
  const secret = "corp-gw/Q+9x7Yz!Kq2mLw8vR4tPn";
  const upstream = startMockUpstream().route("POST", "/v1/chat/completions", () =>
    json(
      {
        error: {
          message: `Invalid credential ${secret}; header was ${Buffer.from(`Bearer ${secret}`).toString("base64")}; query key=${encodeURIComponent(secret)}; basic ${Buffer.from(`${secret}:`).toString("base64url")}`,
          type: "invalid_request_error",
        },
      },
      400,
    ),
  );
  mocks.push(upstream);
  await addKey(router, { provider: `${upstream.url}/v1`, secret });
  const error = (await openaiClient(router.url, router.ownerKey)
    .chat.completions.create({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] })
    .catch((e: unknown) => e)) as { status: number; message: string };
  expect(error.status).toBe(400);
  expect(error.message).toContain("[redacted]");
  for (const form of [secret, encodeURIComponent(secret), Buffer.from(secret).toString("base64").slice(0, 20), Buffer.from(`Bearer ${secret}`).toString("base64").slice(0, 20), Buffer.from(`${secret}:`).toString("base64url").slice(0, 20)]) {
    expect(error.message).not.toContain(form);
  }
});
