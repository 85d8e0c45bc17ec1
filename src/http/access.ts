import type { Principal } from "../accounts/principal.ts";
import { addressAllowed } from "../accounts/ip-ranges.ts";
import { forbidden } from "../core/errors.ts";
import { listAllows } from "../routing/patterns.ts";

/**
 * Per-request access rules after authentication, in the order of the admission
 * chain: client address (AllowIPs), then API path (the account's Resources). The
 * message says which restriction applies and nothing about other accounts.
 */
export function checkAccess(principal: Principal, path: string, ip: string | undefined): void {
  if (principal.allowIps.length > 0 && (ip === undefined || !addressAllowed(principal.allowIps, ip))) {
    throw forbidden(`Requests from ${ip ?? "this address"} are not allowed for this API key (AllowIPs)`, "ip_not_allowed");
  }
  if (principal.resources !== null && !listAllows(principal.resources, path)) {
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
