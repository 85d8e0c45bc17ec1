import type { Sealer } from "../crypto.ts";
import { FINGERPRINT_PURPOSE, REWRAPPED, rewrapFingerprint } from "./fingerprint.ts";

/** What a rekey re-seals, for its counts and its errors (which never hold a value). */
export type Kind = "provider secret" | "partial key" | "setting" | "idempotency answer" | "idempotency fingerprint";

export const KINDS: readonly Kind[] = ["provider secret", "partial key", "setting", "idempotency answer", "idempotency fingerprint"];

export interface RekeyCounts {
  /** Values sealed with the old key, now sealed with the new one (fingerprints: rewrapped). */
  resealed: Record<Kind, number>;
  /** Values already sealed with the new key (an instance running with it wrote them, or a rekey ran before). */
  alreadyNew: number;
  /** Partial keys an old router stored in clear, now sealed. */
  sealedFromClear: number;
}

export function emptyCounts(): RekeyCounts {
  return { resealed: Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<Kind, number>, alreadyNew: 0, sealedFromClear: 0 };
}

/** A value the rekey cannot carry over: names the row, never the value. */
export class RekeyRefusal extends Error {}

/**
 * Re-seals values from the old key to the new one. `from` opens with the new key or the
 * old (values an instance running with the new key wrote are already new), `to` holds the
 * new key alone: every value written is opened again with it, and must give back what the
 * old one held, before it is handed out.
 */
export function createResealer(from: Sealer, to: Sealer) {
  const fingerprintKey = to.derivedKey(FINGERPRINT_PURPOSE);
  const counts = emptyCounts();
  return {
    counts,
    /** The value to write in place of `stored`, or undefined when it stays as it is. */
    reseal(kind: Kind, row: string, stored: string | null): string | undefined {
      if (stored === null) return undefined;
      if (kind === "idempotency fingerprint") {
        if (stored.startsWith(REWRAPPED)) return undefined;
        counts.resealed[kind]++;
        return rewrapFingerprint(stored, fingerprintKey);
      }
      if (!from.isSealed(stored)) {
        // Only partial keys were ever stored in clear (sealClearPartialKeys); any other is left for its owner to see.
        if (kind !== "partial key") return undefined;
        counts.sealedFromClear++;
        return checked(to, kind, row, stored, to.seal(stored));
      }
      if (to.opensWithCurrent(stored)) {
        counts.alreadyNew++;
        return undefined;
      }
      let plain: string;
      try {
        plain = from.open(stored);
      } catch {
        throw new RekeyRefusal(`the ${kind} of ${row} opens with neither the old key nor the new one (is --secret-key-file the key the router runs with?); nothing was changed`);
      }
      counts.resealed[kind]++;
      return checked(to, kind, row, plain, to.seal(plain));
    },
    /** Throws unless a value read back after the writes opens with the new key alone. */
    verify(kind: Kind, row: string, stored: string | null): void {
      if (stored === null || kind === "idempotency fingerprint" || !to.isSealed(stored)) return;
      if (!to.opensWithCurrent(stored)) throw new RekeyRefusal(`the ${kind} of ${row} does not open with the new key after re-sealing`);
    },
  };
}

function checked(to: Sealer, kind: Kind, row: string, plain: string, sealed: string): string {
  if (to.open(sealed) !== plain) throw new RekeyRefusal(`the ${kind} of ${row} did not open to the same value with the new key`);
  return sealed;
}

/** One line per kind re-sealed, for the command's report. */
export function describeCounts(counts: RekeyCounts): string[] {
  const lines = KINDS.map((kind) => `${kind}s re-sealed: ${counts.resealed[kind]}`.replace("idempotency fingerprints re-sealed", "idempotency fingerprints rewrapped"));
  lines.push(`values already sealed with the new key: ${counts.alreadyNew}`);
  if (counts.sealedFromClear > 0) lines.push(`partial keys stored in clear, now sealed: ${counts.sealedFromClear}`);
  return lines;
}
