import { openPostgresStore } from "../postgres/store.ts";
import { openSource, resolveSourcePath } from "./source.ts";
import { COPIED_TABLES } from "./tables.ts";
import { openTarget, rowsPerStatement, TargetNotEmpty } from "./target.ts";
import { verifyCopy, type Verification } from "./verify.ts";

export { TargetNotEmpty, type Verification };
export type { BalanceMismatch, TableCount } from "./verify.ts";

export interface CopyOptions {
  /** A data directory or its router.db. */
  from: string;
  /** The PostgreSQL URL. */
  to: string;
  /** Told after each table is copied. */
  onTable?: (name: string, rows: number) => void;
  now?: () => number;
}

export interface CopyReport {
  /** The SQLite file read. */
  source: string;
  /** Migrations applied to the target before the copy. */
  migrations: string[];
  copied: Array<{ name: string; rows: number }>;
  verification: Verification;
}

/**
 * Copies a single-machine deployment (its SQLite file) into an empty PostgreSQL
 * database (`router migrate-data`): every table, rows as stored (provider secrets stay
 * sealed with the deployment's secret key, never opened), ids kept and each identity
 * moved past the highest id SQLite ever gave out. The target is checked empty before it
 * is migrated and again inside the copy's one transaction, so it is filled whole or not
 * at all and never mixes two deployments. The source is only read, in one snapshot.
 */
export async function copyDeployment(options: CopyOptions): Promise<CopyReport> {
  const now = options.now ?? Date.now;
  const source = openSource(resolveSourcePath(options.from));
  try {
    const target = await openTarget(options.to);
    try {
      // Before migrating: a database holding another deployment is refused untouched.
      const occupied = await target.occupied();
      if (occupied.length > 0) throw new TargetNotEmpty(occupied);
      const migrations = await target.migrate();

      const copied: CopyReport["copied"] = [];
      source.beginSnapshot();
      try {
        const sequences = source.sequences();
        await target.write(async (writer) => {
          for (const table of COPIED_TABLES) {
            let rows = 0;
            let highest = 0;
            for (const page of source.pages(table, rowsPerStatement(table))) {
              await writer.insert(table, page);
              rows += page.length;
              // Identity tables are read in id order: the page's last row has its highest id.
              if (table.identity) highest = Number(page[page.length - 1]![table.identity]);
            }
            if (table.identity) await writer.advanceIdentity(table, Math.max(highest, sequences.get(table.name) ?? 0));
            copied.push({ name: table.name, rows });
            options.onTable?.(table.name, rows);
          }
        });
      } finally {
        source.endSnapshot();
      }

      const targetStore = await openPostgresStore(options.to, { migrate: false, max: 2 });
      try {
        const verification = await verifyCopy(source, target, targetStore, now());
        return { source: source.path, migrations, copied, verification };
      } finally {
        targetStore.close();
      }
    } finally {
      await target.close();
    }
  } finally {
    source.close();
  }
}
