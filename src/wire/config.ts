/**
 * System configuration on the wire (`/x-config`, owner only, spec 2.4). Every answer is
 * the full export; `PUT` takes an object of item names to values and `DELETE` a list of
 * items to reset. Values are each item's own (JSON items as objects, the rest as text),
 * checked by the item table (admin/config/items.ts), so here they are unknown but for
 * the mapper items, whose text form clients parse (wire/mapper-text.ts).
 */
import { Type, type Static, type TSchema } from "@sinclair/typebox";

const mapper = (format: string) =>
  Type.Optional(Type.String({ description: `${format} entries, comma-separated, in routing order; "" when set without entries` }));

/** Item name → value of every item set; EMAIL_PASS travels as its mask. */
export const ConfigExport = Type.Object({
  configs: Type.Intersect([
    Type.Object({
      MODEL_MAPPER: mapper("`<source_pattern>=<target_model>`"),
      LEVEL_MAPPER: mapper("`<model_pattern>=<level>`"),
      SWITCH_OVER: mapper("`<primary_level>=<backup_level>`"),
    }),
    Type.Record(Type.String(), Type.Unknown()),
  ]),
});
export type ConfigExport = Static<typeof ConfigExport>;

const text = (maxLength: number) => Type.String({ maxLength });
const mapperValue = (format: string) =>
  Type.Union([Type.String({ description: `${format} entries, comma-separated` }), Type.Record(Type.String(), Type.Union([Type.String(), Type.Integer()]))]);
const jsonItem = (what: string) => Type.Union([Type.Object({}, { additionalProperties: true, description: what }), Type.String({ description: `${what}, as JSON text` })]);

/**
 * The value each item takes in `PUT /x-config`, as the item table (admin/config/items.ts,
 * typed by the same names) reads it; the table also checks what a type cannot say (the
 * entries of a mapper, an address, PRICING's structure) and names the item at fault.
 */
const ITEM_VALUES: Record<ConfigItemName, TSchema> = {
  MODEL_MAPPER: mapperValue("`<source_pattern>=<target_model>`"),
  LEVEL_MAPPER: mapperValue("`<model_pattern>=<level>`"),
  SWITCH_OVER: mapperValue("`<primary_level>=<backup_level>`"),
  PRICING: jsonItem("the pricing structure (docs/api.md, The catalog and PRICING)"),
  XAI_MAIL: text(254),
  EMAIL_SMTP: text(253),
  EMAIL_PORT: Type.Union([Type.Integer({ minimum: 1, maximum: 65535 }), Type.String({ pattern: "^\\s*\\d+\\s*$" })]),
  EMAIL_AUTH: text(254),
  EMAIL_PASS: Type.String({ maxLength: 1024, description: "******** keeps the stored password" }),
  RESOURCES: Type.Union([Type.String(), Type.Array(Type.String())]),
  MODEL_LIMITS: jsonItem("model pattern → {rpm, rph, rpd, tpm, tph, tpd}"),
};

/** `PUT /x-config`: some items and their new values; at least one, none unknown. */
export const ConfigUpdateBody = Type.Object(
  Object.fromEntries(Object.entries(ITEM_VALUES).map(([name, schema]) => [name, Type.Optional(schema)])),
  { additionalProperties: false, minProperties: 1 },
);

/** `DELETE /x-config` with a body: the items to reset (without a body: PRICING). Names are the item table's to check. */
export const ConfigResetBody = Type.Object(
  { keys: Type.Array(Type.String({ minLength: 1, expected: "a configuration item name" }), { minItems: 1, expected: "a non-empty array of configuration item names" }) },
  { additionalProperties: false },
);
export type ConfigResetBody = Static<typeof ConfigResetBody>;

/** `POST /x-config/test-mail`: the recipient; without a body, `{}` or `null`, the caller's own address. */
export const TestMailBody = Type.Object({ to: Type.Optional(Type.Union([Type.String(), Type.Null()], { expected: "a valid email address" })) }, { additionalProperties: false });
export type TestMailBody = Static<typeof TestMailBody>;

/** A test mail the server took. */
export const TestMailResult = Type.Object({
  object: Type.Literal("test_mail"),
  sent: Type.Literal(true),
  to: Type.String(),
  response: Type.String({ description: "the SMTP server's final answer, e.g. 250 OK: queued" }),
});
export type TestMailResult = Static<typeof TestMailResult>;

/**
 * Every configuration item, with what applies while it is not set (docs/api.md,
 * "Configuration items"). The server's item table (admin/config/items.ts) is typed by
 * these names, so the two cannot drift; the CLI names an unknown item and an unset
 * item's default from here.
 */
export const CONFIG_ITEM_DEFAULTS = {
  MODEL_MAPPER: "every model is served as asked",
  LEVEL_MAPPER: "every model is served by Level 1",
  SWITCH_OVER: "no Level switches over to another",
  PRICING: "the catalog's prices",
  XAI_MAIL: "none; no mail is sent",
  EMAIL_SMTP: "none; no mail is sent",
  EMAIL_PORT: "587",
  EMAIL_AUTH: "none; mail is sent without a login",
  EMAIL_PASS: "none",
  RESOURCES: "no system restriction on API paths",
  MODEL_LIMITS: "no model-level limits",
} as const;
export type ConfigItemName = keyof typeof CONFIG_ITEM_DEFAULTS;
export const CONFIG_ITEM_NAMES = Object.keys(CONFIG_ITEM_DEFAULTS) as ConfigItemName[];
