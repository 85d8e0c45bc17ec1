import { describe, expect, test } from "bun:test";
import { createLocalBus, type Invalidation, type InvalidationBus } from "../../src/core/invalidation.ts";

/**
 * The contract every invalidation bus keeps (issue 14, item 6), run against each
 * implementation: in-process today; a Redis-backed one joins this list.
 */
const implementations: Array<[string, (onError?: (error: unknown, event: Invalidation) => void) => InvalidationBus]> = [["in-process", createLocalBus]];

describe.each(implementations)("invalidation bus: %s", (_name, make) => {
  test("every subscriber hears every event, in subscription order, before publish resolves", async () => {
    const bus = make();
    const heard: string[] = [];
    bus.subscribe((e) => {
      heard.push(`a:${e.kind}`);
    });
    bus.subscribe((e) => {
      heard.push(`b:${e.kind}`);
    });
    await bus.publish({ kind: "account", accountId: 7 });
    await bus.publish({ kind: "everything" });
    expect(heard).toEqual(["a:account", "b:account", "a:everything", "b:everything"]);
  });

  test("an unsubscribed listener hears nothing more; others go on", async () => {
    const bus = make();
    const heard: Invalidation[] = [];
    const stop = bus.subscribe((e) => {
      heard.push(e);
    });
    const other: Invalidation[] = [];
    bus.subscribe((e) => {
      other.push(e);
    });
    await bus.publish({ kind: "keys", tenantId: 0 });
    stop();
    await bus.publish({ kind: "config", tenantId: 3 });
    expect(heard).toEqual([{ kind: "keys", tenantId: 0 }]);
    expect(other).toEqual([{ kind: "keys", tenantId: 0 }, { kind: "config", tenantId: 3 }]);
  });

  test("a listener that throws is reported and does not keep the others from hearing", async () => {
    const errors: Array<[string, string]> = [];
    const bus = make((error, event) => errors.push([(error as Error).message, event.kind]));
    const heard: string[] = [];
    bus.subscribe(() => {
      throw new Error("broken cache");
    });
    bus.subscribe((e) => {
      heard.push(e.kind);
    });
    await bus.publish({ kind: "everything" });
    expect(heard).toEqual(["everything"]);
    expect(errors).toEqual([["broken cache", "everything"]]);
  });

  test("a listener added while an event is delivered hears the next one, not that one", async () => {
    const bus = make();
    const late: string[] = [];
    bus.subscribe(() => {
      bus.subscribe((e) => {
        late.push(e.kind);
      });
    });
    await bus.publish({ kind: "account", accountId: 1 });
    expect(late).toEqual([]);
  });

  test("publish waits for subscribers still at work; one that fails later is reported too", async () => {
    const errors: string[] = [];
    const bus = make((error) => errors.push((error as Error).message));
    const done: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    bus.subscribe(async () => {
      await gate;
      done.push("slow");
    });
    bus.subscribe(async () => {
      throw new Error("reload failed");
    });
    let resolved = false;
    const publishing = bus.publish({ kind: "keys", tenantId: 0 }).then(() => (resolved = true));
    await Bun.sleep(0);
    expect(resolved).toBe(false);
    release();
    await publishing;
    expect(done).toEqual(["slow"]);
    expect(errors).toEqual(["reload failed"]);
  });
});
