import { expect, test } from "bun:test";
import { statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createSealer, loadOrCreateSecretKey } from "../../src/store/crypto.ts";
import { hashApiKey, issueApiKey } from "../../src/accounts/api-keys.ts";
import { tempDir } from "../helpers/router.ts";

test("sealed secrets open with the same key, not with another, and never contain the plain text", () => {
  const dir = tempDir();
  const key = loadOrCreateSecretKey(join(dir, "secret.key"));
  expect(statSync(join(dir, "secret.key")).mode & 0o777).toBe(0o600);
  expect(loadOrCreateSecretKey(join(dir, "secret.key"))).toEqual(key);
  const sealer = createSealer(key);
  const secret = "sk-upstream-0123456789abcdefghij";
  const sealed = sealer.seal(secret);
  expect(sealed).not.toContain(secret);
  expect(sealer.seal(secret)).not.toBe(sealed); // fresh IV each time
  expect(sealer.open(sealed)).toBe(secret);
  const other = createSealer(new Uint8Array(32).fill(7));
  expect(() => other.open(sealed)).toThrow();
});

test("derived keys: one per purpose, the same for the same sealing key, unrelated to it and to each other", () => {
  const key = new Uint8Array(32).fill(3);
  const sealer = createSealer(key);
  const a = sealer.derivedKey("idempotency-fingerprint");
  expect(a.length).toBe(32);
  expect(createSealer(new Uint8Array(32).fill(3)).derivedKey("idempotency-fingerprint")).toEqual(a);
  expect(sealer.derivedKey("another-purpose")).not.toEqual(a);
  expect(createSealer(new Uint8Array(32).fill(4)).derivedKey("idempotency-fingerprint")).not.toEqual(a);
  expect(Buffer.from(a).equals(Buffer.from(key))).toBe(false);
});

test("isSealed tells sealed values from values stored in clear before a column was sealed", () => {
  const sealer = createSealer(new Uint8Array(32).fill(3));
  expect(sealer.isSealed(sealer.seal("…0123456789abcdefghij"))).toBe(true);
  expect(sealer.isSealed("…0123456789abcdefghij")).toBe(false);
});

test("a key file that is not a 32-byte key is refused, never replaced", () => {
  const path = join(tempDir(), "secret.key");
  writeFileSync(path, "not a key");
  expect(() => loadOrCreateSecretKey(path)).toThrow(/32-byte/);
});

test("API keys carry at least 192 bits, are hashed with SHA-256 and shown only by prefix", () => {
  const issued = issueApiKey();
  expect(issued.key).toMatch(/^sk-rt-[0-9A-Za-z]{43}$/); // 43 base62 chars ≈ 256 bits
  expect(issued.hash).toBe(hashApiKey(issued.key));
  expect(issued.hash).toMatch(/^[0-9a-f]{64}$/);
  expect(issued.key.startsWith(issued.prefix)).toBe(true);
  expect(issued.prefix.length).toBeLessThanOrEqual(10);
  expect(issueApiKey().key).not.toBe(issued.key);
});
