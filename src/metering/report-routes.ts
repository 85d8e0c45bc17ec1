import { Elysia } from "elysia";
import { canManage } from "../accounts/access.ts";
import type { Principal } from "../accounts/principal.ts";
import { nanosToCredits } from "../accounts/records.ts";
import type { AccountsService } from "../accounts/service.ts";
import type { Clock } from "../core/clock.ts";
import { forbidden } from "../core/errors.ts";
import type { AuthPluginDeps } from "../http/auth-deps.ts";
import { authPlugin } from "../http/plugins.ts";
import type { Store } from "../store/store.ts";
import type { LiveUsage, RankedBill } from "../wire/usage.ts";
import { buildBill } from "./reports/bill.ts";
import { parseBillRange } from "./reports/dates.ts";
import { liveRanges, liveTotals } from "./reports/live.ts";
import { rankUsers } from "./reports/ranking.ts";
import { groupByAccountModel, groupByDayModel, type Audience } from "./reports/usage-query.ts";

/**
 * What the reports read: balances and descendants (the accounts service), the usage
 * rollups and account names, and the clock's business day and month.
 */
export interface ReportRouteDeps {
  accountsService: Pick<AccountsService, "balanceNanos" | "resolve">;
  store: Pick<Store, "usage" | "accounts">;
  clock: Clock;
}

/**
 * Usage reports (spec 4.3, docs/reports.md): `/dashboard/live` and `/dashboard/bill`
 * for the caller's own usage, `/x-bill` for its descendants. All read the daily
 * rollups (usage_daily), never the raw usage rows.
 */
export function reportRoutes(deps: ReportRouteDeps & AuthPluginDeps) {
  const rangeOf = (request: Request) => parseBillRange(new URL(request.url).searchParams, deps.clock.businessDate());

  return new Elysia()
    .use(authPlugin(deps))
    .get(
      "/dashboard/live",
      async ({ principal }): Promise<LiveUsage> => {
        const account = principal.account;
        const ranges = liveRanges(deps.clock);
        const [balance, daily, monthly] = await Promise.all([
          deps.accountsService.balanceNanos(account.id),
          liveTotals(deps.store, account.id, ranges.day),
          liveTotals(deps.store, account.id, ranges.month),
        ]);
        return {
          object: "live_usage",
          account: {
            id: account.id,
            name: account.name,
            email: account.email,
            alias: account.alias,
            level: account.depth,
            isOwner: account.isOwner,
            balance: nanosToCredits(balance),
          },
          daily_usage: daily,
          monthly_usage: monthly,
        };
      },
      { auth: true },
    )
    .get(
      "/dashboard/bill",
      async ({ principal, request }) => {
        const range = rangeOf(request);
        return buildBill(groupByDayModel(await deps.store.usage.rollups({ accountId: principal.account.id }, range)), range);
      },
      { auth: true },
    )
    .get(
      "/x-bill",
      async ({ principal, request }): Promise<RankedBill> => {
        const caller = managerOf(principal);
        const range = rangeOf(request);
        const user = new URL(request.url).searchParams.get("user");
        // `user` selects that descendant and everything under it; otherwise every descendant, never the caller.
        const audience: Audience = user
          ? { path: (await deps.accountsService.resolve(caller, user, "subtree")).path, includeRoot: true }
          : { path: caller.path, includeRoot: false };
        const rows = await deps.store.usage.rollups(audience, range);
        const perAccount = groupByAccountModel(rows);
        const names = await deps.store.accounts.identities([...new Set(perAccount.map((row) => row.accountId))]);
        return {
          ...buildBill(groupByDayModel(rows), range),
          usage_users: rankUsers(perAccount, (id) => names.get(id)),
        };
      },
      { auth: true },
    );
}

function managerOf(principal: Principal) {
  if (!canManage(principal.account)) {
    throw forbidden("Bills of other accounts need account management access (Resources including /x-users)", "manage_not_allowed");
  }
  return principal.account;
}
