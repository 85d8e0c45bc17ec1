import { Elysia } from "elysia";
import type { Deps } from "../deps.ts";
import { checkAccess } from "../http/access.ts";
import { clientIp } from "../http/client-ip.ts";
import type { PricingAnswer } from "../wire/pricing.ts";
import { createPriceBook, scaleTable } from "./pricing/price-book.ts";

const CATALOG_BOOK = createPriceBook();

/**
 * `GET /x-pricing`: the public prices (catalog plus owner overrides) without a key;
 * with a key, the account's effective prices (every price × its Rates). A wrong key
 * is still a 401: silently falling back to public prices would hide the mistake.
 */
export function pricingRoutes(deps: Deps) {
  return new Elysia().get("/x-pricing", async ({ request }): Promise<PricingAnswer> => {
    const principal = await deps.auth.optional(request, "openai");
    // Without a key: the deployment's prices; in the BYOK style no tenant is known, so the catalog alone.
    const tenant = principal ? await deps.scope(principal.account) : deps.tenants.byok ? undefined : await deps.tenants.load(0);
    if (principal) checkAccess(principal, "/x-pricing", () => clientIp(request, deps.config.trustProxy), tenant!.settings.resources());
    const table = tenant ? tenant.settings.prices().table : CATALOG_BOOK.table;
    const rates = principal?.account.rates ?? 1;
    return {
      object: "pricing",
      Currency: "USD",
      Units: { ChatPricing: "per 1M tokens (ContextWindow and MaxOutput: tokens)", ImgPricing: "per image", AudioPricing: "per minute", VideoPricing: "per second", CallPricing: "per call" },
      Rates: rates,
      ...(principal ? scaleTable(table, rates) : table),
    };
  });
}
