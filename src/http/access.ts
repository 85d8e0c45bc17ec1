import type { Principal } from "../accounts/principal.ts";
import { addressAllowed } from "../accounts/ip-ranges.ts";
import { forbidden } from "../core/errors.ts";
import { listAllows, type CompiledPattern } from "../routing/patterns.ts";

/**
 * Paths an owner reaches whatever the system RESOURCES allowlist says, so that a
 * RESOURCES value that leaves out `/x-config` can always be changed back (every
 * method of `/x-config`), and the console can still tell who is signed in.
 */
export const OWNER_RECOVERY_PATHS: ReadonlySet<string> = new Set(["/x-config", "/dashboard/status", "/dashboard/info"]);

/**
 * Per-request access rules after authentication, in the order of the admission
 * chain: client address (AllowIPs), then API path: first the system-wide RESOURCES
 * allowlist (`system`, null when unset), which binds owners too except on
 * OWNER_RECOVERY_PATHS, then the account's own Resources. The message says which
 * restriction applies and nothing about other accounts.
 */
export function checkAccess(
  principal: Principal,
  path: string,
  /** The client's address, asked for only when the key has AllowIPs. */
  clientIp: () => string | undefined,
  system: readonly CompiledPattern[] | null,
  /** The path the account's own Resources are checked against, when another (the request log's dashboard fallback). */
  resourcesPath = path,
): void {
  if (principal.allowIps.length > 0) {
    const ip = clientIp();
    if (ip === undefined || !addressAllowed(principal.allowIps, ip)) {
      throw forbidden(`Requests from ${ip ?? "this address"} are not allowed for this API key (AllowIPs)`, "ip_not_allowed");
    }
  }
  if (system != null && !listAllows(system, path) && !(principal.account.isOwner && OWNER_RECOVERY_PATHS.has(path))) {
    throw forbidden(`${path} is not in the system RESOURCES allowlist of this router`, "resource_not_allowed");
  }
  if (principal.resources !== null && !listAllows(principal.resources, resourcesPath)) {
    throw forbidden(`This API key may not use ${path} (Resources)`, "resource_not_allowed");
  }
}

/** AllowModels, checked on the model the client asked for. */
export function checkModel(principal: Principal, model: string | undefined): void {
  if (model === undefined || principal.allowModels.length === 0) return;
  if (!listAllows(principal.allowModels, model)) {
    throw forbidden(`The model ${model} is not allowed for this API key (AllowModels)`, "model_not_allowed");
  }
}
