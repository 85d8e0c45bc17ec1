import { Elysia } from "elysia";
import type { Principal } from "../accounts/principal.ts";
import { forbidden } from "../core/errors.ts";
import type { Authenticator } from "./auth.ts";
import type { ServeConfig } from "../config.ts";
import type { AccountRow } from "../store/store.ts";
import type { Tenant } from "../tenancy/tenants.ts";
import { familyOfRequest } from "../formats/registry.ts";
import { checkAccess } from "./access.ts";
import { clientIp } from "./client-ip.ts";

/** What an authenticated route receives: the caller and its tenant. */
// A type alias, not an interface: Elysia's macro typing needs an index-compatible object type.
export type Caller = {
  principal: Principal;
  tenant: Tenant;
};

/** What authentication needs: the key check, the proxy rule for client addresses, and the caller's tenant. */
export interface AuthenticateDeps {
  readonly auth: Authenticator;
  readonly config: Pick<ServeConfig, "trustProxy">;
  tenantOf(account: Pick<AccountRow, "path">): Promise<Tenant>;
}

/**
 * The caller of an authenticated route: key (401), then AllowIPs and Resources (403).
 * `refused` hears of a 403 (the caller is known by then), before it is thrown.
 */
export async function authenticate(
  deps: AuthenticateDeps,
  request: Request,
  path: string,
  refused?: (request: Request, path: string, caller: Caller, error: unknown) => void,
): Promise<Caller> {
  const principal = await deps.auth.require(request, familyOfRequest(request, path));
  const tenant = await deps.tenantOf(principal.account);
  try {
    checkAccess(principal, path, () => clientIp(request, deps.config.trustProxy), tenant.settings.resources());
  } catch (error) {
    refused?.(request, path, { principal, tenant }, error);
    throw error;
  }
  return { principal, tenant };
}

/**
 * `{ auth: true }` on a route resolves `principal` and its `tenant` (401 otherwise);
 * `{ owner: true }` additionally requires a first-level owner account (403 otherwise).
 */
export function authPlugin(deps: AuthenticateDeps) {
  const admit = (request: Request, path: string): Promise<Caller> => authenticate(deps, request, path);
  return new Elysia({ name: "auth" }).macro({
    auth: {
      resolve({ request, path }): Promise<Caller> {
        return admit(request, path);
      },
    },
    owner: {
      async resolve({ request, path }): Promise<Caller> {
        const caller = await admit(request, path);
        if (!caller.principal.account.isOwner) throw forbidden("Only owner accounts may use this endpoint", "owner_only");
        return caller;
      },
    },
  });
}
