/** Liveness and readiness on the wire (`/healthz`, `/readyz`; docs/api.md). */
import { Type, type Static } from "@sinclair/typebox";

/** A dependency's last probe: `embedded` for the SQLite file and the in-memory State, which are never down. */
const Dependency = Type.Union([Type.Literal("up"), Type.Literal("down"), Type.Literal("embedded")]);
const Dependencies = { database: Dependency, redis: Dependency };

/** `GET /healthz`: always 200 while the process answers. */
export const Health = Type.Object({ status: Type.Literal("ok"), ...Dependencies });
export type Health = Static<typeof Health>;

/** `GET /readyz`: 200 `ready`; 503 `unavailable` (a dependency is down) or `stopping` (a graceful stop began). */
export const Readiness = Type.Object({ status: Type.Union([Type.Literal("ready"), Type.Literal("unavailable"), Type.Literal("stopping")]), ...Dependencies });
export type Readiness = Static<typeof Readiness>;
