/**
 * Trust of a private upstream CA (--upstream-ca-file). Passing `tls: { ca }` to every
 * fetch makes Bun set up TLS afresh for each call (measured: about three times the CPU
 * per call), while a CA the runtime itself trusts through NODE_EXTRA_CA_CERTS costs
 * nothing per call. So `serve` re-launches itself with NODE_EXTRA_CA_CERTS naming a
 * private bundle of the flag's CA and the operator's own NODE_EXTRA_CA_CERTS, and says
 * so in this variable; the router then passes no CA per call.
 */
import { resolve } from "node:path";

/** Set by the re-launch to the absolute path of the CA file the runtime now trusts. */
export const CA_MERGED_ENV = "ROUTER_UPSTREAM_CA_MERGED";

/** Whether the runtime already trusts `caFile` (the process was re-launched for it). */
export function runtimeTrusts(caFile: string, env: NodeJS.ProcessEnv = process.env): boolean {
  return env[CA_MERGED_ENV] === resolve(caFile);
}
