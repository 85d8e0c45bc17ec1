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
