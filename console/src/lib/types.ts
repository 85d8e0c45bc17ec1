/**
 * Shapes of the router's answers the console reads (docs/api.md): the server's wire
 * models (src/wire/). Types are imported with `import type`, so neither TypeBox nor
 * anything of the server is bundled; the constant lists come from the wire's
 * dependency-free constants module.
 */
import type { AccountRecord as AccountFields, CreatedAccount } from "../../../src/wire/accounts.ts";
import type { AzureConfig, ProviderKeyOverview, ProviderKeyRecord, ProviderKeySummary, VertexConfig } from "../../../src/wire/provider-keys.ts";
import type { ProviderType } from "../../../src/wire/constants.ts";
import type { BillInfo as Bill, UsageUser } from "../../../src/wire/usage.ts";
import type { PricingTable as Prices } from "../../../src/wire/pricing.ts";

export { MODEL_LIMIT_MEMBERS, NOTICE_CONTENT_MAX, NOTICE_TITLE_MAX, PRICING_SECTIONS, RATE_FIELDS, SPEND_FIELDS } from "../../../src/wire/constants.ts";
export type { LimitField, PricingSection, ProviderType } from "../../../src/wire/constants.ts";
export type { AccountStatus, BatchEntryResult, BatchResult, CreditReport, ModelLimits, RotatedKey } from "../../../src/wire/accounts.ts";
export type { ConfigExport, TestMailResult } from "../../../src/wire/config.ts";
export type { KeyTestResult } from "../../../src/wire/provider-keys.ts";
export type { Notice, NoticeFeed } from "../../../src/wire/notices.ts";
export type { LogPage, LogRow } from "../../../src/wire/oplog.ts";
export type { PricingAnswer } from "../../../src/wire/pricing.ts";
export type { RequestAttempt, RequestRecord } from "../../../src/wire/requests.ts";
export type { LiveUsage, UsageTotals } from "../../../src/wire/usage.ts";

/** The account views read `/dashboard/info` (no balance) and `/x-users` (with it; the key once, on creation). */
export type AccountRecord = AccountFields & Partial<Pick<CreatedAccount, "Balance" | "APIKey">>;

/** The key form edits the members of every provider type, so it sees the config union flattened. */
export type ProviderConfig = { provider_type?: ProviderType } & Partial<Omit<AzureConfig, "provider_type"> & Omit<VertexConfig, "provider_type">>;

/** A key as listed (the summary) or read for its form (`fields=edit`, the record without the secret): the console never reads or shows the secret. */
export type ProviderKey = ProviderKeySummary & { config?: ProviderConfig } & Partial<Pick<ProviderKeyRecord, "SleepReason" | "SleepUntil">>;
/** A row of the keys list (`fields=overview`): no secret, with the type and a Vertex key's account. */
export type ProviderKeyRow = ProviderKeyOverview;

/** `/dashboard/bill`; `/x-bill` adds `usage_users`. */
export type BillInfo = Bill & { usage_users?: UsageUser[] };

/** PRICING and `/x-pricing` list only the sections they have. */
export type PricingTable = Partial<Prices>;
