import { Elysia } from "elysia";
import type { Deps } from "../deps.ts";
import { checkAccess } from "../http/access.ts";
import { clientIp } from "../http/client-ip.ts";
import { scaleTable } from "./pricing/price-book.ts";

/**
 * `GET /x-pricing`: the public prices (catalog plus owner overrides) without a key;
 * with a key, the account's effective prices (every price × its Rates). A wrong key
 * is still a 401: silently falling back to public prices would hide the mistake.
 */
export function pricingRoutes(deps: Deps) {
  return new Elysia().get("/x-pricing", ({ request }) => {
    const principal = deps.auth.optional(request, "openai");
    if (principal) checkAccess(principal, "/x-pricing", clientIp(request, deps.config.trustProxy), deps.settings.resources());
    const table = deps.settings.prices().table;
    const rates = principal?.account.rates ?? 1;
    return {
      object: "pricing",
      Currency: "USD",
      Units: { ChatPricing: "per 1M tokens", ImgPricing: "per image", AudioPricing: "per minute", VideoPricing: "per second", CallPricing: "per call" },
      Rates: rates,
      ...(principal ? scaleTable(table, rates) : table),
    };
  });
}
