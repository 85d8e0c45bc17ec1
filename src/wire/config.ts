/**
 * System configuration on the wire (`/x-config`, owner only, spec 2.4). Every answer is
 * the full export; `PUT` takes an object of item names to values and `DELETE` a list of
 * items to reset. Values are each item's own (JSON items as objects, the rest as text),
 * checked by the item table (admin/config/items.ts), so here they are unknown but for
 * the mapper items, whose text form clients parse (wire/mapper-text.ts).
 */
import { Type, type Static } from "@sinclair/typebox";

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
