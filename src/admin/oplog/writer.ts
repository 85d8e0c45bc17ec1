import type { Clock } from "../../core/clock.ts";
import { redact } from "../../core/redact.ts";
import type { Store } from "../../store/store.ts";

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
  /** Resolves once the row is stored. */
  write(entry: OperationEntry): Promise<void>;
}

export function createOperationLog(deps: { store: Store; clock: Clock; tenantOf?: (actorId: number) => Promise<number> }): OperationLog {
  return {
    async write(entry) {
      // The actor's tenant unless the caller named one (0 in a single-tenant deployment).
      const tenantId = entry.tenantId ?? (entry.actorId !== null && deps.tenantOf ? await deps.tenantOf(entry.actorId) : 0);
      await deps.store.operations.write({
        tenantId,
        at: deps.clock.now(),
        actorId: entry.actorId,
        action: entry.action,
        targetId: entry.targetId ?? null,
        details: redact(JSON.stringify(entry.details ?? {})),
        ip: entry.ip ?? null,
      });
    },
  };
}
