import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addKey } from "../helpers/keys.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

// Issue 16: with translation every model is reachable from every family, so each model
// entry says which formats its Level's keys speak natively.
let router: TestRouter;
beforeAll(async () => {
  router = await startRouter();
  await router.deps.settings.update({ LEVEL_MAPPER: "claude-*=2,gpt-*=3" });
  await addKey(router, { provider: "https://10.2.0.1/v1", level: 2, config: { provider_type: "standard", formats: ["anthropic"], models: ["claude-sonnet-4"] } });
  await addKey(router, { provider: "https://10.2.0.2/v1", level: 3, config: { provider_type: "standard", formats: ["openai", "responses"], models: ["gpt-4o"] } });
  await addKey(router, { provider: "https://10.2.0.3/v1", level: 3, status: false, config: { provider_type: "standard", formats: ["gemini"], models: ["gpt-4o"] } });
});
afterAll(() => router?.stop());

const get = async (path: string, headers: Record<string, string> = {}) => (await router.fetch(path, { headers })).json() as Promise<any>;

describe("x_router_formats in the model lists", () => {
  test("each family's list and single-model answer names the formats the model's Level speaks natively (enabled keys only)", async () => {
    const openai = await get("/v1/models");
    const byId = Object.fromEntries(openai.data.map((m: any) => [m.id, m.x_router_formats]));
    expect(byId["claude-sonnet-4"]).toEqual(["anthropic"]);
    expect(byId["gpt-4o"]).toEqual(["openai", "responses"]);

    const anthropic = await get("/v1/models", { "anthropic-version": "2023-06-01" });
    expect(anthropic.data.find((m: any) => m.id === "claude-sonnet-4").x_router_formats).toEqual(["anthropic"]);
    const gemini = await get("/v1beta/models");
    expect(gemini.models.find((m: any) => m.name === "models/gpt-4o").x_router_formats).toEqual(["openai", "responses"]);
    expect((await get("/v1/models/gpt-4o")).x_router_formats).toEqual(["openai", "responses"]);
  });
});
