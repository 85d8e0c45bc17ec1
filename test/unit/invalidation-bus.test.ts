import { describe, expect, test } from "bun:test";
import { createLocalBus, type Invalidation, type InvalidationBus } from "../../src/core/invalidation.ts";

/**
 * The contract every invalidation bus keeps (issue 14, item 6), run against each
 * implementation: in-process today; a Redis-backed one joins this list.
 */
const implementations: Array<[string, (onError?: (error: unknown, event: Invalidation) => void) => InvalidationBus]> = [["in-process", createLocalBus]];

describe.each(implementations)("invalidation bus: %s", (_name, make) => {
  test("every subscriber hears every event, in subscription order, before publish returns", () => {
    const bus = make();
    const heard: string[] = [];
    bus.subscribe((e) => heard.push(`a:${e.kind}`));
    bus.subscribe((e) => heard.push(`b:${e.kind}`));
    bus.publish({ kind: "account", accountId: 7 });
    bus.publish({ kind: "everything" });
    expect(heard).toEqual(["a:account", "b:account", "a:everything", "b:everything"]);
  });

  test("an unsubscribed listener hears nothing more; others go on", () => {
    const bus = make();
    const heard: Invalidation[] = [];
    const stop = bus.subscribe((e) => heard.push(e));
    const other: Invalidation[] = [];
    bus.subscribe((e) => other.push(e));
    bus.publish({ kind: "keys", tenantId: 0 });
    stop();
    bus.publish({ kind: "config", tenantId: 3 });
    expect(heard).toEqual([{ kind: "keys", tenantId: 0 }]);
    expect(other).toEqual([{ kind: "keys", tenantId: 0 }, { kind: "config", tenantId: 3 }]);
  });

  test("a listener that throws is reported and does not keep the others from hearing", () => {
    const errors: Array<[string, string]> = [];
    const bus = make((error, event) => errors.push([(error as Error).message, event.kind]));
    const heard: string[] = [];
    bus.subscribe(() => {
      throw new Error("broken cache");
    });
    bus.subscribe((e) => heard.push(e.kind));
    bus.publish({ kind: "everything" });
    expect(heard).toEqual(["everything"]);
    expect(errors).toEqual([["broken cache", "everything"]]);
  });

  test("a listener added while an event is delivered hears the next one, not that one", () => {
    const bus = make();
    const late: string[] = [];
    bus.subscribe(() => {
      bus.subscribe((e) => late.push(e.kind));
    });
    bus.publish({ kind: "account", accountId: 1 });
    expect(late).toEqual([]);
  });
});
