import { Elysia } from "elysia";
import { badRequest, forbidden } from "../core/errors.ts";
import type { Deps } from "../deps.ts";
import { onlyFields, readJsonObject } from "../http/body.ts";
import { clientIp } from "../http/client-ip.ts";
import { pageParams, paginationHeaders, positiveIntParam } from "../http/pagination.ts";
import { authPlugin } from "../http/plugins.ts";
import type { AccountRow } from "../store/schema/accounts.ts";
import { canManage } from "./access.ts";
import { runBatchCredit } from "./batch-credit.ts";
import { readAccountInput } from "./input.ts";
import type { Principal } from "./principal.ts";
import { accountRecord, nanosToCredits } from "./records.ts";
import { ORDERS, type AccountsService, type Scope } from "./service.ts";

/** Account management (spec 4.2), limited to the caller's subtree; `POST /x-self` for every account. */
export function accountRoutes(deps: Deps, service: AccountsService) {
  const record = (row: AccountRow) => ({
    object: "account",
    ...accountRecord(row),
    Balance: nanosToCredits(service.balanceNanos(row.id)),
  });

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

  const list = (scope: Scope) => ({ principal, request, set }: { principal: Principal; request: Request; set: { headers: Record<string, string | number> } }) => {
    const caller = manager(principal);
    const query = new URL(request.url).searchParams;
    const { page, size } = pageParams(query);
    const order = query.get("order") || "id";
    // Own keys only: `constructor` or `toString` must not reach the query as an "order".
    if (!Object.hasOwn(ORDERS, order)) throw badRequest(`order must be one of ${Object.keys(ORDERS).join(", ")}`, "order");
    const { rows, total } = service.list(caller, scope, {
      id: positiveIntParam(query, "id"),
      level: positiveIntParam(query, "level"),
      name: query.get("name") || undefined,
      email: query.get("email") || undefined,
      order,
      page,
      size,
    });
    Object.assign(set.headers, paginationHeaders(total, page, size));
    return rows.map(record);
  };

  return new Elysia()
    .use(authPlugin(deps))
    .post(
      "/x-users",
      async ({ principal, request, set }) => {
        manager(principal);
        const input = readAccountInput(await readJsonObject(request, deps.config.maxBody));
        const { account, key } = service.create(actor(principal, request), input);
        set.status = 201;
        return { ...record(account), APIKey: key };
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
    .get("/x-users/:identifier", ({ principal, params }) => record(service.resolve(manager(principal), params.identifier, "direct")), {
      auth: true,
    })
    .get("/x-dna/:identifier", ({ principal, params }) => record(service.resolve(manager(principal), params.identifier, "subtree")), {
      auth: true,
    })
    .put(
      "/x-users/:identifier",
      async ({ principal, request, params }) => {
        manager(principal);
        const input = readAccountInput(await readJsonObject(request, deps.config.maxBody));
        return record(service.update(actor(principal, request), params.identifier, input));
      },
      { auth: true },
    )
    .delete(
      "/x-users/:identifier",
      async ({ principal, request, params }) => {
        manager(principal);
        const { target, returned } = await service.remove(actor(principal, request), params.identifier);
        return { object: "account", ID: target.id, deleted: true, CreditReturned: nanosToCredits(returned) };
      },
      { auth: true },
    )
    .post(
      "/x-self",
      async ({ principal, request }) => {
        const body = await readJsonObject(request, deps.config.maxBody);
        onlyFields(body, ["confirm"]);
        const issued = service.rotateKey(actor(principal, request), body.confirm);
        return { object: "api_key", ID: principal.account.id, APIKey: issued.key, KeyPrefix: issued.prefix };
      },
      { auth: true },
    );
}
