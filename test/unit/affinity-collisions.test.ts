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

test("BYOK tenants keep their ids apart; an unprefixed row of before is still its owner's; a client secret is found anywhere", async () => {
  const collisions: string[] = [];
  const affinity = createAffinity({ store, clock: createManualClock(Date.UTC(2026, 10, 28)), onCollision: (id, kind) => collisions.push(`${kind}:${id}`) });
  // Tenants 1 and 7 (their owners' ids), each an account making "thread_1" upstream.
  await affinity.remember("thread_1", "thread", 3, 30, undefined, 1);
  await affinity.remember("thread_1", "thread", 8, 80, undefined, 7);
  expect(collisions).toEqual([]);
  expect(await affinity.lookup("thread_1", 1)).toMatchObject({ objectId: "thread_1", accountId: 3, keyId: 30 });
  expect(await affinity.lookup("thread_1", 7)).toMatchObject({ objectId: "thread_1", accountId: 8, keyId: 80 });
  expect((await affinity.ownedBy(8, "thread", 7)).map((row) => row.objectId)).toEqual(["thread_1"]);
  await affinity.forget("thread_1", 7);
  expect(await affinity.lookup("thread_1", 7)).toBeUndefined();
  expect(await affinity.lookup("thread_1", 1)).toMatchObject({ accountId: 3 });
  // A row a BYOK deployment stored before ids were kept per tenant (no prefix) still serves its owner.
  await store.objects.put({ objectId: "resp_old", kind: "response", accountId: 8, keyId: 80, createdAt: 1, mintedBy: null });
  expect(await affinity.lookup("resp_old", 7)).toMatchObject({ objectId: "resp_old", accountId: 8 });
  expect((await affinity.ownedBy(8, "response", 7)).map((row) => row.objectId)).toEqual(["resp_old"]);
  await affinity.forget("resp_old", 7);
  expect(await store.objects.get("resp_old")).toBeUndefined();
  // A realtime socket presents only the secret: its binding is found without a tenant.
  await affinity.remember("ek-byok", "client_secret", 8, 80, "minter-8", 7);
  expect(await affinity.lookup("ek-byok")).toMatchObject({ accountId: 8, mintedBy: "minter-8" });
});
