/** The operation log on the wire (`GET /dashboard/logs`, owner only). */
import { Type, type Static } from "@sinclair/typebox";
import { Count, Instant, Nullable } from "./common.ts";

/** One management write: who did what to whom, from where. */
export const LogRow = Type.Object({
  id: Count(),
  time: Instant(),
  /** e.g. `account.create`, `key.update`, `news.delete`. */
  action: Type.String(),
  operator_id: Nullable(Count()),
  target_id: Nullable(Count()),
  /** The action's own details (secrets masked); the stored text itself should it not parse. */
  details: Type.Unknown(),
  ip: Nullable(Type.String()),
});
export type LogRow = Static<typeof LogRow>;

export const LogPage = Type.Object({
  logs: Type.Array(LogRow),
  total: Count(),
  page: Count(),
  size: Count(),
  has_more: Type.Boolean(),
});
export type LogPage = Static<typeof LogPage>;
