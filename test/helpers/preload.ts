// Tests must not depend on the machine's zone or on a developer's ROUTER_* variables.
process.env.TZ = "UTC";
for (const name of Object.keys(process.env)) {
  if (name.startsWith("ROUTER_")) delete process.env[name];
}
