import { expect, test } from "bun:test";
import { EndingCalls } from "../../src/gateway/ending-calls.ts";

/** Streams still read for their usage at a stop (src/gateway/ending-calls.ts): the stop waits for them, within a bound. */
test("a stop waits for the calls still ending, and no longer than its bound", async () => {
  const calls = new EndingCalls();
  expect(await calls.ended(10)).toBe(0);
  let finish!: () => void;
  const end = new Promise<void>((resolve) => (finish = resolve));
  calls.add(end);
  void end.then(() => calls.done(end));
  // Still under way past the bound.
  expect(await calls.ended(20)).toBe(1);
  setTimeout(finish, 10);
  expect(await calls.ended(5_000)).toBe(0);
  expect(calls.size).toBe(0);
});
