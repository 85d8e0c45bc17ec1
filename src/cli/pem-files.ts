/**
 * `router serve`'s PEM files (`--tls-cert`, `--tls-key`, `--upstream-ca-file`), checked
 * with the other flags, before the data directory gets a database or an owner key. Found
 * later, a directory or a file that is not PEM failed as "cannot listen …: EISDIR" or an
 * OpenSSL code naming no file (after the owner was created), and a CA file that is not PEM
 * was taken silently, leaving the upstream untrusted until its first call failed.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { UsageError } from "./flags.ts";

/** The text of a file a flag names; `option` is how the value is named (`--tls-cert`, `ROUTER_TLS_CERT`). */
function readPem(option: string, path: string): string {
  if (!existsSync(path)) throw new UsageError(`${option}: file ${path} does not exist`);
  if (statSync(path).isDirectory()) throw new UsageError(`${option}: ${path} is a directory, not a file`);
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new UsageError(`${option}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}

/** A file holding at least one PEM certificate (the first is parsed: a bundle's others are the runtime's to read). */
export function certificateFile(option: string, path: string | undefined): { path: string; certificate: X509Certificate } | undefined {
  if (path === undefined) return undefined;
  const text = readPem(option, path);
  try {
    return { path, certificate: new X509Certificate(text) };
  } catch {
    throw new UsageError(`${option}: ${path} holds no PEM certificate`);
  }
}

/** A file holding a PEM private key. */
export function privateKeyFile(option: string, path: string | undefined): { path: string; key: KeyObject } | undefined {
  if (path === undefined) return undefined;
  const text = readPem(option, path);
  try {
    return { path, key: createPrivateKey(text) };
  } catch {
    throw new UsageError(`${option}: ${path} holds no PEM private key`);
  }
}

/** `--tls-key` must be the key of `--tls-cert`'s certificate, or no client could connect. */
export function checkKeyPair(keyOption: string, cert: ReturnType<typeof certificateFile>, key: ReturnType<typeof privateKeyFile>): void {
  if (cert === undefined || key === undefined) return;
  if (!cert.certificate.checkPrivateKey(key.key)) {
    throw new UsageError(`${keyOption}: ${key.path} is not the private key of the certificate in ${cert.path}`);
  }
}
