import { expect, test } from "bun:test";
import { resendWaitMs, sendWithResends } from "../../src/wire/resend.ts";

/**
 * Spec 7, rule 1, for the router's own clients (the admin CLI and the console): they
 * retry only 429, 502, 503 and network failures, a finite number of times, with
 * exponential backoff and jitter.
 */

/** Sends answering from a script ("lost" throws as a dropped connection), and the waits asked for. */
function scripted(steps: Array<"lost" | number>) {
  const waits: number[] = [];
  let sends = 0;
  const send = async () => {
    const step = steps[sends++];
    if (step === undefined || step === "lost") throw new TypeError("Failed to fetch");
    return new Response("{}", { status: step });
  };
  const wait = async (ms: number) => {
    waits.push(ms);
  };
  return { send, wait, waits, sends: () => sends };
}

test("a write is sent again only after a lost answer, a 502 or a 503; never after a 504 or another status", async () => {
  for (const status of [504, 500, 429, 400, 404]) {
    const s = scripted([status, 200]);
    const sent = await sendWithResends(true, s.send, s.wait);
    expect({ status, sends: s.sends() }).toEqual({ status, sends: 1 });
    expect("response" in sent && sent.response.status).toBe(status);
  }
  for (const step of ["lost", 502, 503] as const) {
    const s = scripted([step, 200]);
    const sent = await sendWithResends(true, s.send, s.wait);
    expect({ step, sends: s.sends() }).toEqual({ step, sends: 2 });
    expect("response" in sent && sent.response.status).toBe(200);
  }
});

test("at most three sends, the waits doubling with jitter", async () => {
  const low = scripted([503, 503, 503, 200]);
  await sendWithResends(true, low.send, low.wait, () => 0);
  expect(low.sends()).toBe(3);
  const high = scripted([503, 503, 503, 200]);
  await sendWithResends(true, high.send, high.wait, () => 0.999999);
  // Exponential: the second wait is twice the first; jitter: the random half moves them.
  expect(low.waits).toEqual([500, 1000]);
  expect(high.waits).toEqual([1000, 2000]);
  for (let attempt = 1; attempt <= 2; attempt++) {
    const ms = resendWaitMs(attempt);
    expect(ms).toBeGreaterThanOrEqual(500 * 2 ** (attempt - 1));
    expect(ms).toBeLessThanOrEqual(1000 * 2 ** (attempt - 1));
  }
});

test("a read is never sent again", async () => {
  const s = scripted(["lost", 200]);
  const sent = await sendWithResends(false, s.send, s.wait);
  expect(s.sends()).toBe(1);
  expect("lost" in sent).toBe(true);
});
