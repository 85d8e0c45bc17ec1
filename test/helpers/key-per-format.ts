import { afterAll, beforeAll, beforeEach } from "bun:test";
import type { KeyFormat } from "../../src/wire/constants.ts";
import { addKey } from "./keys.ts";
import { startMockUpstream, type MockUpstream } from "./mock-upstream.ts";
import { startRouter, type TestRouter } from "./router.ts";
import type { StartOptions } from "./router.ts";

/** Every key format, in the order their Levels are numbered (1 to 4). */
export const KEY_FORMATS: readonly KeyFormat[] = ["openai", "responses", "anthropic", "gemini"];

/**
 * A router with one mock upstream per key format, each behind a key that speaks only
 * that format, on a Level of its own, and a LEVEL_MAPPER sending `<prefix>-<format>` to
 * it: a call for `<prefix>-anthropic` goes to the Anthropic key whatever the client's
 * family (so every client × upstream pair of the translation can be driven). Registers
 * the file's beforeAll (start), afterAll (stop) and beforeEach (each mock's script and
 * record reset); `router` is set once the beforeAll ran.
 */
export function keyPerFormat(prefix: string, options: StartOptions = {}): { readonly router: TestRouter; readonly ups: Map<KeyFormat, MockUpstream> } {
  const ups = new Map<KeyFormat, MockUpstream>();
  let router: TestRouter | undefined;
  beforeAll(async () => {
    router = await startRouter(options);
    const mapping: string[] = [];
    for (const [i, format] of KEY_FORMATS.entries()) {
      const mock = startMockUpstream();
      ups.set(format, mock);
      await addKey(router, { provider: mock.url, level: i + 1, config: { provider_type: "standard", formats: [format] } });
      mapping.push(`${prefix}-${format}=${i + 1}`);
    }
    await router.deps.settings.update({ LEVEL_MAPPER: mapping.join(",") });
  });
  afterAll(async () => {
    await router?.stop();
    await Promise.all([...ups.values()].map((m) => m.stop()));
  });
  beforeEach(() => {
    for (const mock of ups.values()) mock.reset();
  });
  return {
    get router() {
      if (!router) throw new Error("the router starts in beforeAll");
      return router;
    },
    ups,
  };
}
