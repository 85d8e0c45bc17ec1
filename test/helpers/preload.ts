// Tests must not depend on the machine's zone or on a developer's ROUTER_* variables
// (except the test switch that leaves out suites needing PostgreSQL or Redis).
process.env.TZ = "UTC";
for (const name of Object.keys(process.env)) {
  if (name.startsWith("ROUTER_") && name !== "ROUTER_TEST_SKIP_SERVICES") delete process.env[name];
}
