import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { chmodSync, closeSync, existsSync, fsyncSync, linkSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";

/** Seals provider secrets at rest with AES-256-GCM; the key never enters the database. */
export interface Sealer {
  seal(plain: string): string;
  open(sealed: string): string;
  /** Whether a stored value is in this sealed form (values written before a column was sealed are not). */
  isSealed(stored: string): boolean;
  /**
   * A 32-byte key derived from the sealing key for one `purpose` (HKDF-SHA-256), for
   * keyed hashes of data a database copy must not let anyone test guesses against (an
   * unkeyed hash of a password is a guess checked offline). Another purpose gives an
   * unrelated key, and none of them gives the sealing key back.
   */
  derivedKey(purpose: string): Uint8Array;
  /**
   * `derivedKey(purpose)` of the sealing key, then of each fallback key: a keyed hash
   * written before a rotation (docs/architecture.md, "Rotating the sealing key") is
   * recognised while the key it was made with is still given as a fallback.
   */
  derivedKeys(purpose: string): Uint8Array[];
  /** Whether `sealed` opens with the sealing key itself (not only with a fallback key). */
  opensWithCurrent(sealed: string): boolean;
}

const VERSION = "v1";

/**
 * Seals with `key`; opens with `key`, or else with one of `fallbacks` (keys a rotation is
 * moving away from, or towards: --fallback-secret-key-file). Nothing is sealed with a
 * fallback key.
 */
export function createSealer(key: Uint8Array, fallbacks: readonly Uint8Array[] = []): Sealer {
  for (const k of [key, ...fallbacks]) if (k.length !== 32) throw new Error("the secret key must be 32 bytes");
  const derive = (k: Uint8Array, purpose: string) => new Uint8Array(hkdfSync("sha256", k, new Uint8Array(0), `router:${purpose}`, 32));
  const opensWith = (k: Uint8Array, sealed: string) => {
    try {
      openWith(k, sealed);
      return true;
    } catch {
      return false;
    }
  };
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64")}`;
    },
    open(sealed) {
      try {
        return openWith(key, sealed);
      } catch (error) {
        for (const fallback of fallbacks) if (opensWith(fallback, sealed)) return openWith(fallback, sealed);
        throw error;
      }
    },
    isSealed: (stored) => stored.startsWith(`${VERSION}:`),
    derivedKey: (purpose) => derive(key, purpose),
    derivedKeys: (purpose) => [key, ...fallbacks].map((k) => derive(k, purpose)),
    opensWithCurrent: (sealed) => opensWith(key, sealed),
  };
}

function openWith(key: Uint8Array, sealed: string): string {
  const [version, payload] = sealed.split(":", 2);
  if (version !== VERSION || !payload) throw new Error("unrecognised sealed value");
  const raw = Buffer.from(payload, "base64");
  const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
}

/**
 * Reads a key file that must already exist (a fallback key, the key of a backup): never
 * created, since a new key opens nothing. `flag` names where it was given.
 */
export function loadSecretKey(path: string, flag: string): Uint8Array {
  if (!existsSync(path)) throw new Error(`${flag} ${path} does not exist`);
  return loadOrCreateSecretKey(path);
}

/**
 * Reads the 32-byte key (base64 in the file), creating it with mode 0600 when the
 * file does not exist yet. A file that exists but is not a valid key is an error,
 * never silently replaced: that would make every sealed secret unreadable.
 */
export function loadOrCreateSecretKey(path: string): Uint8Array {
  if (!existsSync(path)) createKeyFile(path);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    // The runtime's message names no file ("EISDIR: illegal operation on a directory, read").
    throw new Error(`cannot read the secret key file ${path}: ${(error as Error).message}`);
  }
  const key = Buffer.from(text.trim(), "base64");
  if (key.length !== 32) throw new Error(`${path} does not hold a 32-byte base64 key`);
  return key;
}

/**
 * Writes a new key to a file of its own, synced, then links it in under `path`: the key
 * file appears whole or not at all. Written in place, a full disk (or a crash) during the
 * first start left `path` empty, and every start after it refused that file for good,
 * the space back or not, until someone removed it by hand. The link fails when another
 * instance sharing the data directory created its key meanwhile: that one is kept.
 */
function createKeyFile(path: string): void {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.new`;
  try {
    const fd = openSync(temporary, "wx", 0o600);
    try {
      writeSync(fd, randomBytes(32).toString("base64") + "\n");
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    chmodSync(temporary, 0o600);
    try {
      linkSync(temporary, path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
  } catch (error) {
    throw new Error(`${path} could not be written: ${(error as Error).message}`);
  } finally {
    try {
      unlinkSync(temporary);
    } catch {}
  }
}
