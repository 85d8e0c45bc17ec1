/** The HKDF purpose of the idempotency fingerprints' key (src/store/crypto.ts `derivedKey`). */
export const FINGERPRINT_PURPOSE = "idempotency-fingerprint";

/** Marks a fingerprint `router rekey` rewrapped with the new key. */
export const REWRAPPED = "rekeyed:";

/**
 * An idempotency fingerprint (a keyed hash of a request, src/http/idempotency.ts) as
 * `router rekey` leaves it: hashed again with the new key's fingerprint key. The request
 * itself is not stored, so the fingerprint cannot be made again with the new key; left as
 * it was, it would stay testable with the old key (the one suspected leaked), and a retry
 * after the rotation would be refused as "another request" instead of being recognised.
 * Rewrapped, a retry matches when its fingerprint under the old key (a fallback key) or
 * under the new one, wrapped, equals it; without the old key the retry is told its
 * answer can no longer be matched.
 */
export function rewrapFingerprint(fingerprint: string, newFingerprintKey: Uint8Array): string {
  return REWRAPPED + new Bun.CryptoHasher("sha256", newFingerprintKey).update(REWRAPPED + fingerprint).digest("hex");
}
