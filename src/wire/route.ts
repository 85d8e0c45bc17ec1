/** Route explain on the wire (`GET /x-route`): how a call would be served now, without making it. */
import { Type, type Static } from "@sinclair/typebox";
import { Count, Nullable } from "./common.ts";

/** One key of a Level, in the order the pool would try them. Shown to a manager, it has no ID or Name. */
export const RouteKey = Type.Object({
  ID: Type.Optional(Count()),
  Name: Type.Optional(Type.String()),
  /** ready, probe, asleep, disabled or unsupported. */
  state: Type.String(),
  /** Why it would or would not take the call, in words (naming the translation when one is needed). */
  why: Type.String(),
  /** The key the call would take now. */
  would_serve: Type.Boolean(),
});
export type RouteKey = Static<typeof RouteKey>;

export const RouteLevel = Type.Object({
  level: Count(),
  /** The Level's switch-over state as this instance last saw it. */
  switched: Type.Boolean(),
  backup: Nullable(Count()),
  keys: Type.Array(RouteKey),
});

export const RouteExplanation = Type.Object({
  object: Type.Literal("route"),
  model: Type.String(),
  account: Type.Object({ ID: Count(), Name: Type.String() }),
  allowed: Type.Boolean(),
  /** The rule that would refuse the call (AllowModels), with its message. */
  refused_by: Nullable(Type.Object({ rule: Type.String(), message: Type.String() })),
  model_mapper: Nullable(Type.Object({ pattern: Type.String(), target: Type.String() })),
  effective_model: Type.String(),
  level_mapper: Nullable(Type.Object({ pattern: Type.String(), level: Count() })),
  level: Count(),
  /** The routed Level, then down its SWITCH_OVER chain. */
  levels: Type.Array(RouteLevel),
  /** Whether some key would take the call now. */
  served: Type.Boolean(),
  /** The ChatPricing entry for the effective model. */
  price: Nullable(Type.Record(Type.String(), Type.Unknown())),
  /** The window limits that would apply, by what they apply to, and the account's spend limits. */
  limits: Type.Array(Type.Intersect([Type.Object({ applies_to: Type.String() }), Type.Record(Type.String(), Type.Unknown())])),
});
export type RouteExplanation = Static<typeof RouteExplanation>;
