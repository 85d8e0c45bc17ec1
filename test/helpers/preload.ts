import { afterAll } from "bun:test";
import { removeTempDirs } from "./temp-dir.ts";

// Tests must not depend on the machine's zone or on a developer's ROUTER_* variables,
// except ROUTER_TEST_SKIP_SERVICES, the knowing opt-out of suites that need PostgreSQL or Redis.
process.env.TZ = "UTC";
for (const name of Object.keys(process.env)) {
  if (name.startsWith("ROUTER_") && name !== "ROUTER_TEST_SKIP_SERVICES") delete process.env[name];
}

// A hook in the preload runs once, after the last test file: the run's temp directories go.
afterAll(removeTempDirs);
