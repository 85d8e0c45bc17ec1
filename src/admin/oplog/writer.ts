import type { Clock } from "../../core/clock.ts";
import { redact } from "../../core/redact.ts";
import type { Store } from "../../store/db.ts";
import { operationLog } from "../../store/schema/operation-log.ts";

export interface OperationEntry {
  /** The tenant the change belongs to (0 in a single-tenant deployment). */
  tenantId?: number;
  actorId: number | null;
  action: string;
  targetId?: number | null;
  details?: Record<string, unknown>;
  ip?: string | null;
}

/** Writes operation-log rows. Callers mask secrets; the writer redacts once more as a guard. */
export interface OperationLog {
  write(entry: OperationEntry): void;
}

export function createOperationLog(deps: { store: Store; clock: Clock; tenantOf?: (actorId: number) => number }): OperationLog {
  return {
    write(entry) {
      deps.store.db
        .insert(operationLog)
        .values({
          // The actor's tenant unless the caller named one (0 in a single-tenant deployment).
          tenantId: entry.tenantId ?? (entry.actorId !== null && deps.tenantOf ? deps.tenantOf(entry.actorId) : 0),
          at: deps.clock.now(),
          actorId: entry.actorId,
          action: entry.action,
          targetId: entry.targetId ?? null,
          details: redact(JSON.stringify(entry.details ?? {})),
          ip: entry.ip ?? null,
        })
        .run();
    },
  };
}
