import { Elysia } from "elysia";
import type { ServeConfig } from "../config.ts";
import { checkAccess } from "../http/access.ts";
import type { Authenticator } from "../http/auth.ts";
import { clientIp } from "../http/client-ip.ts";
import type { AccountRow } from "../store/store.ts";
import type { Tenant, Tenants } from "../tenancy/tenants.ts";
import type { PricingAnswer } from "../wire/pricing.ts";
import { createPriceBook, scaleTable } from "./pricing/price-book.ts";

const CATALOG_BOOK = createPriceBook();

/**
 * What the pricing route uses: optional authentication, the caller's tenant (its
 * Resources and prices), or without a key the single tenant's prices.
 */
export interface PricingRouteDeps {
  auth: Pick<Authenticator, "optional">;
  /** The caller's tenant, once its settings are loaded. */
  tenantOf(account: Pick<AccountRow, "path">): Promise<Pick<Tenant, "settings">>;
  tenants: Pick<Tenants, "byok" | "load">;
  config: Pick<ServeConfig, "trustProxy">;
}

/**
 * `GET /x-pricing`: the public prices (catalog plus owner overrides) without a key;
 * with a key, the account's effective prices (every price × its Rates). A wrong key
 * is still a 401: silently falling back to public prices would hide the mistake.
 */
export function pricingRoutes(deps: PricingRouteDeps) {
  return new Elysia().get("/x-pricing", async ({ request }): Promise<PricingAnswer> => {
    const principal = await deps.auth.optional(request, "openai");
    // Without a key: the deployment's prices; in the BYOK style no tenant is known, so the catalog alone.
    const tenant = principal ? await deps.tenantOf(principal.account) : deps.tenants.byok ? undefined : await deps.tenants.load(0);
    if (principal) checkAccess(principal, "/x-pricing", () => clientIp(request, deps.config.trustProxy), tenant!.settings.resources());
    const table = tenant ? tenant.settings.prices().table : CATALOG_BOOK.table;
    const rates = principal?.account.rates ?? 1;
    return {
      object: "pricing",
      Currency: "USD",
      Units: { ChatPricing: "per 1M tokens (WebSearch, FileSearch, GroundedPrompt: per call; FastMultiplier, PriorityMultiplier, FlexMultiplier, RegionalMultiplier, LongInputFactor, LongOutputFactor: factors; ContextWindow, MaxOutput, LongContextAbove: tokens)", ImgPricing: "per image", AudioPricing: "per minute", VideoPricing: "per second", CallPricing: "per call" },
      Rates: rates,
      ...(principal ? scaleTable(table, rates) : table),
    };
  });
}
