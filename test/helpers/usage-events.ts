import type { UsageEvent } from "../../src/metering/usage-recorder.ts";
import type { Store } from "../../src/store/store.ts";

/** The n-th settled call of account 1 (request id `req-n`), a millisecond apart, costing `costNanos`. */
export const usageEvent = (n: number, costNanos = 0): UsageEvent => ({
  requestId: `req-${n}`,
  accountId: 1,
  endpoint: "/v1/chat/completions",
  requestedModel: "m",
  effectiveModel: "m",
  level: 1,
  keyId: undefined,
  status: 200,
  stream: false,
  usage: { prompt: 1, completion: 1, reasoning: 0, cacheRead: 0, cacheWrite: 0 },
  source: "upstream",
  latencyMs: 1,
  at: Date.UTC(2026, 2, 10) + n,
  costNanos,
});

type Body = Parameters<Store["transaction"]>[0];
/** The store with its transactions passed through `wrap`, which may refuse, delay or run them (`run`). */
export const withTransactions = (store: Store, wrap: (body: Body, run: (body: Body) => Promise<unknown>) => Promise<unknown>): Store =>
  new Proxy(store, {
    get: (target, name, receiver) => (name === "transaction" ? (body: Body) => wrap(body, (b) => target.transaction(b)) : Reflect.get(target, name, receiver)),
  });

/**
 * The store with two faults a test switches: `down` refuses every transaction (an outage),
 * and `loseNextAnswer` lets the next one commit and then fail, as when the connection
 * drops during COMMIT (with `downAfterLoss`, the database then goes away).
 */
export function faultyStore(store: Store) {
  const faults = { down: false, loseNextAnswer: false, downAfterLoss: false };
  const faulty = withTransactions(store, async (body, run) => {
    if (faults.down) throw new Error("database down");
    const result = await run(body);
    if (faults.loseNextAnswer) {
      faults.loseNextAnswer = false;
      if (faults.downAfterLoss) faults.down = true;
      throw new Error("connection lost during COMMIT");
    }
    return result;
  });
  return { store: faulty, faults };
}
