import type { UsageSink } from "../../src/metering/usage-event.ts";
import { usageEvent } from "./usage-events.ts";

/** A small seeded generator of numbers in [0, 1) (mulberry32): a failing seed of a randomized test can be run again. */
export function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Settled calls of account 1 made at random (1 to 3 at a time, costing 100 to 999
 * nano-credits each), and what they add up to: the ids a fault test expects stored once
 * each, and the credit it expects charged once.
 */
export function seededCalls(random: () => number) {
  const recorded: string[] = [];
  let charged = 0;
  return {
    recorded,
    charged: () => charged,
    /** Records a few calls on `recorder`. */
    some(recorder: Pick<UsageSink, "record">): void {
      for (let n = 1 + Math.floor(random() * 3); n > 0; n--) {
        const cost = 100 + Math.floor(random() * 900);
        const event = usageEvent(recorded.length, cost);
        recorder.record(event);
        recorded.push(event.requestId);
        charged += cost;
      }
    },
  };
}

/**
 * The seeds a fault test runs: 1-8, or a hunt's range from `FAULT_SEEDS` (`9-60`), to
 * look for faults the fixed seeds miss; a failing seed then joins the fixed ones.
 */
export function seedsToRun(fixed: readonly number[] = [1, 2, 3, 4, 5, 6, 7, 8]): readonly number[] {
  const range = /^(\d+)-(\d+)$/.exec(process.env.FAULT_SEEDS ?? "");
  if (!range) return fixed;
  const [from, to] = [Number(range[1]), Number(range[2])];
  return Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);
}
