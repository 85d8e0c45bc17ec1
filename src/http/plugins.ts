import { Elysia } from "elysia";
import type { Principal } from "../accounts/principal.ts";
import { forbidden } from "../core/errors.ts";
import type { Deps } from "../deps.ts";
import { familyOf } from "./family.ts";
import { checkAccess } from "./access.ts";
import { clientIp } from "./client-ip.ts";

/**
 * `{ auth: true }` on a route resolves `principal` (401 otherwise);
 * `{ owner: true }` additionally requires a first-level owner account (403 otherwise).
 */
export function authPlugin(deps: Pick<Deps, "auth" | "config" | "settings">) {
  const admit = (request: Request, path: string): Principal => {
    const principal = deps.auth.require(request, familyOf(path));
    checkAccess(principal, path, clientIp(request, deps.config.trustProxy), deps.settings.resources());
    return principal;
  };
  return new Elysia({ name: "auth" }).macro({
    auth: {
      resolve({ request, path }): { principal: Principal } {
        return { principal: admit(request, path) };
      },
    },
    owner: {
      resolve({ request, path }): { principal: Principal } {
        const principal = admit(request, path);
        if (!principal.account.isOwner) throw forbidden("Only owner accounts may use this endpoint", "owner_only");
        return { principal };
      },
    },
  });
}
