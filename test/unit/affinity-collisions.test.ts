import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { createManualClock } from "../../src/core/clock.ts";
import { createAffinity } from "../../src/gateway/affinity.ts";
import { openSqliteStore } from "../../src/store/sqlite/store.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const store = openSqliteStore(join(tempDir("affinity-"), "router.db"));
afterAll(() => store.close());

test("an id two upstreams number alike keeps its first owner; a client secret given twice opens nothing", async () => {
  const collisions: string[] = [];
  const affinity = createAffinity({ store, clock: createManualClock(Date.UTC(2026, 10, 28)), onCollision: (id, kind) => collisions.push(`${kind}:${id}`) });
  await affinity.remember("file-1", "file", 1, 10);
  await affinity.remember("file-1", "file", 2, 20);
  expect(await affinity.lookup("file-1")).toMatchObject({ accountId: 1, keyId: 10 });
  // The same account making it again (another key of its own) moves it: nothing is taken from anyone.
  await affinity.remember("file-1", "file", 1, 11);
  expect(await affinity.lookup("file-1")).toMatchObject({ accountId: 1, keyId: 11 });
  // A client secret is a credential: held by two accounts, it would open sessions as the wrong one.
  await affinity.remember("ek-hash", "client_secret", 1, 10, "minter-1");
  await affinity.remember("ek-hash", "client_secret", 2, 20, "minter-2");
  expect(await affinity.lookup("ek-hash")).toBeUndefined();
  expect(await store.objects.get("ek-hash")).toBeUndefined();
  expect(collisions).toEqual(["file:file-1", "client_secret:ek-hash"]);
});
