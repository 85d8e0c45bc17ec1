/**
 * Provider Keys on the wire (spec 2.1, `/x-keys`, owner only): the creation and update
 * bodies and the record forms. Field names are the body's, so a full record read
 * back can be sent again as an update.
 */
import { Type, type Static } from "@sinclair/typebox";
import { Count, Credits, Instant, Nullable, Text } from "./common.ts";
import { KEY_FORMATS, PROVIDER_TYPES, SLEEP_REASONS } from "./constants.ts";

/** Model names and patterns a key serves, for model lists; when absent, what its upstream's own list says. */
const Models = Type.Optional(Type.Array(Type.String()));
/**
 * The wire formats the key speaks natively (issue 16); when absent, a default from the
 * provider type and host (src/routing/key-formats.ts). A call in another format is
 * translated when a translator joins the two.
 */
const Formats = Type.Optional(Type.Array(Type.Union(KEY_FORMATS.map((format) => Type.Literal(format)))));

export const StandardConfig = Type.Object({ provider_type: Type.Literal("standard"), models: Models, formats: Formats });
export type StandardConfig = Static<typeof StandardConfig>;

export const AzureConfig = Type.Object({
  provider_type: Type.Literal("azure"),
  models: Models,
  formats: Formats,
  /** model → deployment name; a model without an entry uses its own name as the deployment. */
  deployments: Type.Optional(Type.Record(Type.String(), Type.String())),
  /** model → api-version; falls back to env AZURE_OPENAI_API_VERSION, then the built-in default. */
  api_versions: Type.Optional(Type.Record(Type.String(), Type.String())),
});
export type AzureConfig = Static<typeof AzureConfig>;

export const VertexConfig = Type.Object({
  provider_type: Type.Literal("vertex"),
  models: Models,
  formats: Formats,
  project_id: Type.Optional(Type.String()),
  /** Default `global`. */
  location: Type.Optional(Type.String()),
  /** Default derived from the location. */
  base_url: Type.Optional(Type.String()),
  token_uri: Type.Optional(Type.String()),
});
export type VertexConfig = Static<typeof VertexConfig>;

/** `config` of a Provider Key as stored and shown: which upstream scheme it speaks, and that scheme's options. */
export const ProviderConfig = Type.Union([StandardConfig, AzureConfig, VertexConfig]);
export type ProviderConfig = Static<typeof ProviderConfig>;

/**
 * `POST /x-keys`. `config` is only required to be an object here: its members depend
 * on its `provider_type`, and the domain reads it member by member so that a fault
 * names the member (`param` `config.provider_type`, `config.models`, …) and the
 * members that type allows, which a union's error could not say.
 */
export const ProviderKeyCreateBody = Type.Object(
  {
    Provider: Type.String({ expected: "an https:// URL string" }),
    SecretKey: Text({ minLength: 20 }),
    Level: Count({ minimum: 1, expected: "a positive integer" }),
    Status: Type.Boolean(),
    NoSleep: Type.Optional(Type.Boolean()),
    Name: Type.Optional(Text({ maxLength: 100, expected: "a string of at most 100 characters" })),
    config: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
);
export type ProviderKeyCreateBody = Static<typeof ProviderKeyCreateBody>;

/** `PUT /x-keys/:id`: some or all of the creation fields; those absent stay as they are. */
export const ProviderKeyUpdateBody = Type.Partial(ProviderKeyCreateBody, { additionalProperties: false });
export type ProviderKeyUpdateBody = Static<typeof ProviderKeyUpdateBody>;

/** The masked form (`fields=summary`): never the secret. */
export const ProviderKeySummary = Type.Object({
  ID: Count(),
  Name: Type.String(),
  Level: Count(),
  Provider: Type.String(),
  /** "…" and the secret's last 20 characters, stored sealed at write time (most or all of a short secret) so listing never opens the secrets themselves. */
  PartialKey: Type.String(),
  NoSleep: Type.Boolean(),
  Status: Type.Boolean(),
  Sleeping: Type.Boolean(),
  CreatedAt: Instant(),
});
export type ProviderKeySummary = Static<typeof ProviderKeySummary>;

export const SleepReason = Type.Union(SLEEP_REASONS.map((reason) => Type.Literal(reason)));

/**
 * A key's health (issue 17), as every instance sees it: read from the store, where each
 * instance adds the attempts its calls made (cached a few seconds).
 */
export const ProviderKeyHealth = Type.Object({
  Today: Type.Object(
    {
      Requests: Count({ description: "upstream attempts made with the key this business day (a failover's attempt counts on each key it tried)" }),
      Errors: Count({ description: "of those, the attempts that failed: an error status, a timeout, a refused or broken connection, a blocked address, a 2xx without an answer (a client that left, or an upstream 4xx for the client's own mistake, is not the key's error)" }),
      Spend: Credits({ description: "credits charged for the calls the key answered this business day (the unit of the usage and bill cost fields)" }),
      AvgLatencyMs: Nullable(Count(), { description: "mean duration of the day's attempts, to the upstream's answer (a stream: its first event) or failure; null with no attempt" }),
    },
    { description: "this business day (in --timezone, as bills count days)" },
  ),
  LastError: Nullable(
    Type.Object({
      At: Instant({ description: "when the failed attempt ended" }),
      Status: Nullable(Count(), { description: "the upstream's HTTP status; null when none arrived (timeout, network)" }),
      Message: Type.String({ description: "what the upstream or the connection said, redacted as the request log's attempt messages (never a secret), at most 500 characters; the failure kind when nothing was said" }),
    }),
    { description: "the key's latest failed attempt, whenever it was; null when none is known" },
  ),
  LastSuccessAt: Nullable(Instant({ description: "when the key's latest answered attempt ended; null when none is known" })),
});
export type ProviderKeyHealth = Static<typeof ProviderKeyHealth>;

/** The full form: what the owner needs to audit or copy a key, so with the opened secret. */
export const ProviderKeyRecord = Type.Composite([
  ProviderKeySummary,
  Type.Object({
    SecretKey: Type.String(),
    config: ProviderConfig,
    SleepReason: Nullable(SleepReason),
    /** End of an automatic sleep; null when awake or asleep until woken (manual, auth). */
    SleepUntil: Nullable(Instant()),
    UpdatedAt: Instant(),
    Health: ProviderKeyHealth,
  }),
]);
export type ProviderKeyRecord = Static<typeof ProviderKeyRecord>;

/**
 * `fields=edit` (a router extension for the console's key form): the full record without
 * `SecretKey`. The form shows the settings and the PartialKey and never the secret, so
 * the opened secret does not travel to the browser to fill it.
 */
export const ProviderKeyEdit = Type.Omit(ProviderKeyRecord, ["SecretKey"]);
export type ProviderKeyEdit = Static<typeof ProviderKeyEdit>;

/**
 * `fields=overview` (a router extension for the console): the summary and what an owner
 * reads in a list, never the secret: the provider type, a Vertex key's service-account
 * email (an identity, not a credential), and why and until when a key sleeps.
 */
export const ProviderKeyOverview = Type.Composite([
  ProviderKeySummary,
  Type.Object({
    ProviderType: Type.Union(PROVIDER_TYPES.map((type) => Type.Literal(type))),
    ClientEmail: Nullable(Type.String()),
    SleepReason: Nullable(SleepReason),
    SleepUntil: Nullable(Instant()),
    Health: ProviderKeyHealth,
  }),
]);
export type ProviderKeyOverview = Static<typeof ProviderKeyOverview>;

/** `DELETE /x-keys/:id`. */
export const ProviderKeyDeleted = Type.Object({ id: Count(), object: Type.Literal("provider_key"), deleted: Type.Literal(true) });
export type ProviderKeyDeleted = Static<typeof ProviderKeyDeleted>;

/** `POST /x-keys/:id/test`: the cheapest call the key allows, and what came of it in words. */
export const KeyTestResult = Type.Object({
  ok: Type.Boolean(),
  status: Nullable(Count(), { description: "the upstream's HTTP status; null when no answer came" }),
  message: Type.String({ description: "what happened and what to do about it" }),
});
export type KeyTestResult = Static<typeof KeyTestResult>;
