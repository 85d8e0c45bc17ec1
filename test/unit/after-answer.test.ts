import { describe, expect, test } from "bun:test";
import { afterAnswer, runQueuedAfterAnswer } from "../../src/core/after-answer.ts";

describe("work after an answer", () => {
  test("runs after the current task, in the order queued, all in one macrotask", async () => {
    const seen: string[] = [];
    afterAnswer(() => seen.push("first"));
    afterAnswer(() => seen.push("second"));
    seen.push("handler returns");
    await Promise.resolve();
    // Microtasks (a handler's awaits) come before it: the answer is written first.
    expect(seen).toEqual(["handler returns"]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual(["handler returns", "first", "second"]);
  });

  test("runQueuedAfterAnswer runs what is queued now (a flush sees every settled call); tasks queued meanwhile run too", () => {
    const seen: string[] = [];
    afterAnswer(() => {
      seen.push("settle");
      afterAnswer(() => seen.push("queued by the first"));
    });
    runQueuedAfterAnswer();
    expect(seen).toEqual(["settle", "queued by the first"]);
    runQueuedAfterAnswer();
    expect(seen).toHaveLength(2);
  });

  test("a task that throws does not stop the ones after it", async () => {
    const seen: string[] = [];
    const stderr = process.stderr.write;
    const written: string[] = [];
    process.stderr.write = ((chunk: string) => (written.push(String(chunk)), true)) as typeof process.stderr.write;
    try {
      afterAnswer(() => {
        throw new Error("boom with sk-proj-abcdefghijklmnopqrstuvwxyz0123456789");
      });
      afterAnswer(() => seen.push("still settled"));
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.stderr.write = stderr;
    }
    expect(seen).toEqual(["still settled"]);
    expect(written.join("")).toContain("deferred work after an answer failed");
    expect(written.join("")).not.toContain("abcdefghijklmnopqrstuvwxyz0123456789");
  });
});
