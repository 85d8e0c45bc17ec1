import { existsSync } from "node:fs";
import { join } from "node:path";
import { createSealer, loadOrCreateSecretKey, loadSecretKey, type Sealer } from "./crypto.ts";

/** The sealer an instance runs with, from `--secret-key-file` and `--fallback-secret-key-file`. */
export interface LoadedSealer {
  sealer: Sealer;
  keyFile: string;
  /** True when the key file did not exist and was created now. */
  keyCreated: boolean;
  fallbackKeyFile?: string;
}

/**
 * Loads the sealing key (created when missing) and the fallback key, if one is given
 * (never created: a new key opens nothing). Values are sealed with the first, opened with
 * either: what lets instances run while a rotation is under way.
 */
export function loadSealer(config: { dataDir: string; secretKeyFile?: string; fallbackSecretKeyFile?: string }): LoadedSealer {
  const keyFile = config.secretKeyFile ?? join(config.dataDir, "secret.key");
  const keyCreated = !existsSync(keyFile);
  const key = loadOrCreateSecretKey(keyFile);
  const fallbackKeyFile = config.fallbackSecretKeyFile;
  const fallback = fallbackKeyFile === undefined ? [] : [loadSecretKey(fallbackKeyFile, "--fallback-secret-key-file")];
  return { sealer: createSealer(key, fallback), keyFile, keyCreated, fallbackKeyFile };
}

/** A stored sealed value and how to name it in an error (never by its content). */
export interface SealedValue {
  name: string;
  value: string;
}

/** What an instance is told about a value none of its keys opens, while others do (a rotation half done). */
export function sealedElsewhereMessage(name: string): string {
  return `${name} is sealed with a key this instance was not given: give it that key with --fallback-secret-key-file (a rotation under way: README, "Rotating the sealing key"), or enter that secret again`;
}

/**
 * Refuses to start an instance whose sealing key cannot open what the shared database
 * already holds: every instance seals and opens provider secrets with one key, and one
 * with another key would fail every call on those secrets (and seal new ones the rest
 * cannot read). `sealed` are the provider secrets and secret settings stored (none yet: no
 * check). With a fallback key, a value sealed with either is accepted. When the keys open
 * some values but not all (a rotation half done: an instance sealed with a key this one
 * lacks), the first it cannot open is named: a key pool built on it would fail.
 */
export function assertSealingKey(sealed: readonly SealedValue[], loaded: LoadedSealer): void {
  const opens = (value: string) => {
    try {
      loaded.sealer.open(value);
      return true;
    } catch {
      return false;
    }
  };
  const closed = sealed.filter((entry) => !opens(entry.value));
  if (closed.length === 0) return;
  if (closed.length < sealed.length) throw new Error(sealedElsewhereMessage(closed[0]!.name));
  const { keyFile, keyCreated, fallbackKeyFile } = loaded;
  const which = keyCreated
    ? `this instance just created a new key in ${keyFile}`
    : fallbackKeyFile === undefined
      ? `the key in ${keyFile} is not the one they were sealed with`
      : `neither the key in ${keyFile} nor the fallback key in ${fallbackKeyFile} is the one they were sealed with`;
  throw new Error(
    `the database holds provider secrets sealed with another key, and ${which}: give this instance the secret.key the other instances use (--secret-key-file or ROUTER_SECRET_KEY_FILE)`,
  );
}
