import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { removeStaleCaBundles, writeCaBundle } from "../../src/cli/relaunch.ts";
import { tempDir } from "../helpers/temp-dir.ts";

/** A bundle directory as a re-launch leaves it. */
function bundleDir(tmp: string, name: string): string {
  const dir = join(tmp, name);
  mkdirSync(dir);
  writeFileSync(join(dir, "ca-bundle.pem"), "-----BEGIN CERTIFICATE-----\n");
  return dir;
}

/** This process's PID namespace, as bundle names carry it. */
const namespace = /\[(\d+)\]/.exec(readlinkSync("/proc/self/ns/pid"))![1]!;

/** The pid of a process that has ended. */
function goneProcessPid(): number {
  const done = Bun.spawnSync(["true"]);
  expect(done.exitCode).toBe(0);
  return done.pid;
}

describe("the merged CA bundles of re-launched routers", () => {
  test("a bundle whose router is gone is removed at the next start; a running router's, another namespace's, an older name's and other files stay", () => {
    const tmp = tempDir("ca-bundles-");
    const deadPid = goneProcessPid();
    const gone = bundleDir(tmp, `router-ca-${namespace}-${deadPid}-Ab12Cd`);
    const running = bundleDir(tmp, `router-ca-${namespace}-${process.pid}-Ef34Gh`);
    const parent = bundleDir(tmp, `router-ca-${namespace}-${process.ppid}-Ij56Kl`);
    // The same pid in another PID namespace (a container sharing the directory) is another process.
    const elsewhere = bundleDir(tmp, `router-ca-${Number(namespace) + 1}-${deadPid}-Mn90Op`);
    const olderName = bundleDir(tmp, "router-ca-Xy78Zw");
    const other = bundleDir(tmp, "something-else");
    removeStaleCaBundles(tmp);
    expect(existsSync(gone)).toBe(false);
    for (const kept of [running, parent, elsewhere, olderName, other]) expect(existsSync(kept)).toBe(true);
  });

  test("a bundle is written under this process's namespace and pid, in a directory of its own", () => {
    const tmp = tempDir("ca-bundles-");
    const ca = join(tmp, "upstream-ca.pem");
    writeFileSync(ca, "-----BEGIN CERTIFICATE-----\nupstream\n-----END CERTIFICATE-----\n");
    const previous = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    try {
      const bundle = writeCaBundle(ca, {})!;
      expect(bundle.startsWith(join(tmp, `router-ca-${namespace}-${process.pid}-`))).toBe(true);
      // This process is running: its own bundle is not taken for a stale one.
      removeStaleCaBundles(tmp);
      expect(existsSync(bundle)).toBe(true);
    } finally {
      if (previous === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = previous;
    }
  });
});
