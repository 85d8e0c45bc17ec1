import { expect, test } from "bun:test";
import { createSealer } from "../../src/store/crypto.ts";
import { FINGERPRINT_PURPOSE, REWRAPPED, rewrapFingerprint } from "../../src/store/rekey/fingerprint.ts";
import { createResealer, RekeyRefusal } from "../../src/store/rekey/reseal.ts";

const OLD = new Uint8Array(32).fill(1);
const NEW = new Uint8Array(32).fill(2);
const OTHER = new Uint8Array(32).fill(3);

test("a sealer with a fallback key opens values sealed with either, and seals with its own key only", () => {
  const oldValue = createSealer(OLD).seal("sk-old");
  const rotating = createSealer(NEW, [OLD]);
  expect(rotating.open(oldValue)).toBe("sk-old");
  expect(rotating.opensWithCurrent(oldValue)).toBe(false);
  const sealed = rotating.seal("sk-new");
  expect(createSealer(NEW).open(sealed)).toBe("sk-new");
  expect(() => createSealer(OLD).open(sealed)).toThrow();
  expect(() => rotating.open(createSealer(OTHER).seal("x"))).toThrow();
  expect(rotating.derivedKeys(FINGERPRINT_PURPOSE)).toEqual([createSealer(NEW).derivedKey(FINGERPRINT_PURPOSE), createSealer(OLD).derivedKey(FINGERPRINT_PURPOSE)]);
});

test("re-sealing: old values move to the new key, new ones and rewrapped fingerprints stay, clear partial keys are sealed; counts say which", () => {
  const resealer = createResealer(createSealer(NEW, [OLD]), createSealer(NEW));
  const moved = resealer.reseal("provider secret", "provider key 1", createSealer(OLD).seal("sk-secret"))!;
  expect(createSealer(NEW).open(moved)).toBe("sk-secret");
  expect(resealer.reseal("setting", "setting EMAIL_PASS", createSealer(NEW).seal("pass"))).toBeUndefined();
  expect(createSealer(NEW).open(resealer.reseal("partial key", "provider key 2", "…tail-in-clear")!)).toBe("…tail-in-clear");
  expect(resealer.reseal("idempotency answer", "row", null)).toBeUndefined();
  const wrapped = resealer.reseal("idempotency fingerprint", "row", "ab12")!;
  expect(wrapped).toBe(rewrapFingerprint("ab12", createSealer(NEW).derivedKey(FINGERPRINT_PURPOSE)));
  expect(wrapped.startsWith(REWRAPPED)).toBe(true);
  expect(resealer.reseal("idempotency fingerprint", "row", wrapped)).toBeUndefined();
  expect(resealer.counts).toEqual({
    resealed: { "provider secret": 1, "partial key": 0, setting: 0, "idempotency answer": 0, "idempotency fingerprint": 1 },
    alreadyNew: 1,
    sealedFromClear: 1,
  });
});

test("a value neither key opens is refused naming its row, never its value; a value left under the old key fails the check", () => {
  const resealer = createResealer(createSealer(NEW, [OLD]), createSealer(NEW));
  let refusal: unknown;
  try {
    resealer.reseal("provider secret", "provider key 7", createSealer(OTHER).seal("sk-do-not-print"));
  } catch (error) {
    refusal = error;
  }
  expect(refusal).toBeInstanceOf(RekeyRefusal);
  expect((refusal as Error).message).toContain("provider key 7");
  expect((refusal as Error).message).not.toContain("sk-do-not-print");
  expect(() => resealer.verify("setting", "setting EMAIL_PASS", createSealer(OLD).seal("pass"))).toThrow(RekeyRefusal);
  expect(() => resealer.verify("setting", "setting EMAIL_PASS", createSealer(NEW).seal("pass"))).not.toThrow();
});
