import type { Sealer } from "./crypto.ts";

/**
 * Refuses to start an instance whose sealing key cannot open what the shared database
 * already holds: every instance seals and opens provider secrets with one key, and one
 * with another key would fail every call on those secrets (and seal new ones the rest
 * cannot read). `sealed` is one stored sealed value, or undefined when there is none yet.
 */
export function assertSealingKey(sealed: string | undefined, sealer: Sealer, keyFile: string, created: boolean): void {
  if (sealed === undefined) return;
  try {
    sealer.open(sealed);
  } catch {
    const which = created ? `this instance just created a new key in ${keyFile}` : `the key in ${keyFile} is not the one they were sealed with`;
    throw new Error(
      `the database holds provider secrets sealed with another key, and ${which}: give this instance the secret.key the other instances use (--secret-key-file or ROUTER_SECRET_KEY_FILE)`,
    );
  }
}
