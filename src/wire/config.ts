/**
 * System configuration on the wire (`/x-config`, owner only, spec 2.4). Every answer is
 * the full export; `PUT` takes an object of item names to values and `DELETE` a list of
 * items to reset. Values are each item's own (JSON items as objects, the rest as text),
 * checked by the item table (admin/config/items.ts), so here they are unknown.
 */
import { Type, type Static } from "@sinclair/typebox";

/** Item name → value of every item set; EMAIL_PASS travels as its mask. */
export const ConfigExport = Type.Object({ configs: Type.Record(Type.String(), Type.Unknown()) });
export type ConfigExport = Static<typeof ConfigExport>;
