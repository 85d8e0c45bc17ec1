import { expect, test } from "bun:test";
import { appendRequestLogValues, flatValues } from "../../src/store/row-values.ts";
import { serializeInSlices } from "../../src/store/sqlite/request-log-writer.ts";
import type { NewRequestLogRow } from "../../src/store/store.ts";

/**
 * A due batch of request-log rows is serialized for the writer thread a slice at a time,
 * so the serving thread is never held for the whole batch: the result is the same flat
 * JSON array the writer always read, and other work runs between the slices.
 */

const row = (n: number): NewRequestLogRow => ({
  requestId: `req-${n}`,
  accountId: n,
  createdAt: 1_000 + n,
  family: "openai",
  endpoint: "/v1/chat/completions",
  requestedModel: n % 2 ? "gpt-4o" : undefined,
  status: 200,
  attempts: JSON.stringify([{ status: 200, message: 'quote " and \\ backslash' }]),
  durationMs: n,
  source: "upstream",
  userAgent: "ünïcode/1.0",
});

test("slices joined are the whole batch's flat array, whatever the slice size", async () => {
  for (const count of [1, 2, 5, 128, 129, 300]) {
    const rows = Array.from({ length: count }, (_, i) => row(i));
    const whole = JSON.stringify(flatValues(rows, appendRequestLogValues));
    for (const slice of [1, 2, 128]) expect(await serializeInSlices(rows, slice)).toBe(whole);
  }
});

test("work queued meanwhile runs between slices", async () => {
  const rows = Array.from({ length: 6 }, (_, i) => row(i));
  const order: string[] = [];
  setImmediate(() => order.push("other work"));
  await serializeInSlices(rows, 2).then(() => order.push("serialized"));
  expect(order).toEqual(["other work", "serialized"]);
  // One slice: no turn is given up.
  const single: string[] = [];
  setImmediate(() => single.push("other work"));
  await serializeInSlices(rows, 10).then(() => single.push("serialized"));
  expect(single).toEqual(["serialized"]);
});
