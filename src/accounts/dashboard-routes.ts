import { Elysia } from "elysia";
import type { Clock } from "../core/clock.ts";
import type { AuthPluginDeps } from "../http/auth-deps.ts";
import { authPlugin } from "../http/plugins.ts";
import type { Store } from "../store/store.ts";
import type { AccountInfo, AccountStatus, CreditReport } from "../wire/accounts.ts";
import { canManage } from "./access.ts";
import { accountRecord, nanosToCredits } from "./records.ts";
import type { AccountsService } from "./service.ts";

/** What the dashboard's account routes read: balances and credit grants, at the clock's time. */
export interface DashboardRouteDeps {
  accountsService: Pick<AccountsService, "balanceNanos">;
  store: Pick<Store, "credit">;
  clock: Clock;
}

/** `GET /dashboard/status` and `GET /dashboard/info`: who the caller is and what it may do. */
export function dashboardAccountRoutes(deps: DashboardRouteDeps & AuthPluginDeps) {
  return new Elysia()
    .use(authPlugin(deps))
    .get(
      "/dashboard/status",
      async ({ principal }): Promise<AccountStatus> => {
        const account = principal.account;
        return {
          object: "account_status",
          id: account.id,
          name: account.name,
          email: account.email,
          alias: account.alias,
          isOwner: account.isOwner,
          level: account.depth,
          balance: nanosToCredits(await deps.accountsService.balanceNanos(account.id)),
          manage: canManage(account),
          timeZone: deps.clock.timeZone,
        };
      },
      { auth: true },
    )
    .get(
      "/dashboard/credit",
      async ({ principal }): Promise<CreditReport> => {
        const grants = await deps.store.credit.grants(principal.account.id, deps.clock.now());
        return {
          object: "credit",
          balance: nanosToCredits(grants.reduce((sum, g) => sum + g.remaining, 0)),
          grants: grants.map((g) => ({
            amount: nanosToCredits(g.amount),
            remaining: nanosToCredits(g.remaining),
            expires_at: g.expiresAt === null ? null : new Date(g.expiresAt).toISOString(),
            created_at: new Date(g.createdAt).toISOString(),
          })),
        };
      },
      { auth: true },
    )
    .get("/dashboard/info", ({ principal }): AccountInfo => ({ object: "account_info", ...accountRecord(principal.account) }), {
      auth: true,
    });
}
