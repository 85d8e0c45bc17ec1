import { afterEach } from "bun:test";
import { addKey } from "./keys.ts";
import { startMockUpstream, type MockUpstream } from "./mock-upstream.ts";
import { startRouter, type StartOptions, type TestRouter } from "./router.ts";

/**
 * Routers and mock upstreams that live for one test: each is stopped after the test
 * that started it (newest first), whatever the test's outcome. Call once per file.
 */
export function perTest() {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return {
    /** Runs `cleanup` after the current test. */
    later(cleanup: () => Promise<void> | void) {
      cleanups.push(cleanup);
    },
    async router(options: StartOptions = {}): Promise<TestRouter> {
      const router = await startRouter(options);
      cleanups.push(() => router.stop());
      return router;
    },
    upstream(): MockUpstream {
      const upstream = startMockUpstream();
      cleanups.push(() => upstream.stop());
      return upstream;
    },
    /** A router with one provider key on Level 1 pointing at a fresh mock upstream. */
    async gateway(options: StartOptions = {}): Promise<{ router: TestRouter; upstream: MockUpstream }> {
      const upstream = this.upstream();
      const router = await this.router(options);
      await addKey(router, { provider: upstream.url });
      return { router, upstream };
    },
  };
}
