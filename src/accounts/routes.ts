import { Elysia } from "elysia";
import { badRequest, forbidden } from "../core/errors.ts";
import type { ServeConfig } from "../config.ts";
import type { AuthPluginDeps } from "../http/auth-deps.ts";
import { readJsonObject } from "../http/body.ts";
import { bodyCheck } from "../wire/check.ts";
import { clientIp } from "../http/client-ip.ts";
import { pageParams, paginationHeaders, positiveIntParam } from "../http/pagination.ts";
import { authPlugin } from "../http/plugins.ts";
import type { AccountOrder, AccountRow } from "../store/store.ts";
import { RotateSelfBody, type AccountDeleted, type CreatedAccount, type ManagedAccount, type RotatedKey } from "../wire/accounts.ts";
import { canManage } from "./access.ts";
import { runBatchCredit } from "./batch-credit.ts";
import { readAccountInput } from "./input.ts";
import type { Principal } from "./principal.ts";
import { accountRecord, nanosToCredits } from "./records.ts";
import { ACCOUNT_ORDERS, type AccountsService, type Scope } from "./service.ts";

/** What the account routes read beyond the service they are given: the body limit and whom to trust for the client address. */
export interface AccountRouteDeps {
  config: Pick<ServeConfig, "maxBody" | "trustProxy">;
}

/** Account management (spec 4.2), limited to the caller's subtree; `POST /x-self` for every account. */
/** The rotation body's model (the one /openapi.json publishes); the date is the service's to check. */
const checkRotate = bodyCheck(RotateSelfBody);

export function accountRoutes(deps: AccountRouteDeps & AuthPluginDeps, service: AccountsService) {
  const record = async (row: AccountRow): Promise<ManagedAccount> => ({
    object: "account" as const,
    ...accountRecord(row),
    Balance: nanosToCredits(await service.balanceNanos(row.id)),
  });
  const isOrder = (order: string): order is AccountOrder => (ACCOUNT_ORDERS as readonly string[]).includes(order);

  const manager = (principal: Principal) => {
    if (!canManage(principal.account)) {
      throw forbidden("Account management is not enabled for this API key (its Resources do not include /x-users)", "manage_not_allowed");
    }
    return principal.account;
  };
  const actor = (principal: Principal, request: Request) => ({
    account: principal.account,
    ip: clientIp(request, deps.config.trustProxy),
  });

  const list = (scope: Scope) => async ({ principal, request, set }: { principal: Principal; request: Request; set: { headers: Record<string, string | number> } }) => {
    const caller = manager(principal);
    const query = new URL(request.url).searchParams;
    const { page, size } = pageParams(query);
    const order = query.get("order") || "id";
    // Only the listed orders reach the store (`constructor` or `toString` are not one).
    if (!isOrder(order)) throw badRequest(`order must be one of ${ACCOUNT_ORDERS.join(", ")}`, "order");
    const { rows, total } = await service.list(caller, scope, {
      id: positiveIntParam(query, "id"),
      level: positiveIntParam(query, "level"),
      name: query.get("name") || undefined,
      email: query.get("email") || undefined,
      order,
      page,
      size,
    });
    Object.assign(set.headers, paginationHeaders(total, page, size));
    return Promise.all(rows.map(record));
  };

  return new Elysia()
    .use(authPlugin(deps))
    .post(
      "/x-users",
      async ({ principal, request, set }): Promise<CreatedAccount> => {
        manager(principal);
        const input = readAccountInput(await readJsonObject(request, deps.config.maxBody), "create");
        const { account, key } = await service.create(actor(principal, request), input);
        set.status = 201;
        return { ...(await record(account)), APIKey: key };
      },
      { auth: true },
    )
    .post(
      "/x-users/batch-credit",
      async ({ principal, request }) => {
        manager(principal);
        return runBatchCredit(service, actor(principal, request), await readJsonObject(request, deps.config.maxBody));
      },
      { auth: true },
    )
    .get("/x-users", list("direct"), { auth: true })
    .get("/x-dna", list("subtree"), { auth: true })
    .get("/x-users/:identifier", async ({ principal, params }) => record(await service.resolve(manager(principal), params.identifier, "direct")), {
      auth: true,
    })
    .get("/x-dna/:identifier", async ({ principal, params }) => record(await service.resolve(manager(principal), params.identifier, "subtree")), {
      auth: true,
    })
    .put(
      "/x-users/:identifier",
      async ({ principal, request, params }) => {
        manager(principal);
        const input = readAccountInput(await readJsonObject(request, deps.config.maxBody));
        return record(await service.update(actor(principal, request), params.identifier, input));
      },
      { auth: true },
    )
    .delete(
      "/x-users/:identifier",
      async ({ principal, request, params }): Promise<AccountDeleted> => {
        manager(principal);
        const { target, returned } = await service.remove(actor(principal, request), params.identifier);
        return { object: "account", ID: target.id, deleted: true, CreditReturned: nanosToCredits(returned) };
      },
      { auth: true },
    )
    .post(
      "/x-self",
      async ({ principal, request }): Promise<RotatedKey> => {
        const body = checkRotate(await readJsonObject(request, deps.config.maxBody));
        const issued = await service.rotateKey(actor(principal, request), body.confirm);
        return { object: "api_key", ID: principal.account.id, APIKey: issued.key, KeyPrefix: issued.prefix };
      },
      { auth: true },
    );
}
