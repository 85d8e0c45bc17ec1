import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { api, createAccount } from "../helpers/owner-ops.ts";
import { skipServices } from "../helpers/postgres-server.ts";
import { waitFor } from "../helpers/router.ts";
import { startScaleOutPair, type ScaleOutPair } from "../helpers/scale-out-pair.ts";

/**
 * A rolling upgrade: instances of two versions side by side on one PostgreSQL and one
 * Redis while they are replaced one at a time. Without two builds, the newer version is
 * simulated by what it would leave in the shared services: bus messages of a kind this
 * router does not know, usage rows in Redis in a form it cannot read, a migration it does
 * not know applied under it. What the older instance must do: keep serving, lose no
 * usage row, drop what it cannot follow rather than misread it.
 */

const chat = (pair: ScaleOutPair, router: "a" | "b", key: string) =>
  api(pair[router], "/v1/chat/completions", { key, body: { model: "acme-chat", max_tokens: 20, messages: [{ role: "user", content: "hi" }] } });

if (!skipServices) {
  let pair: ScaleOutPair;
  let sql: SQL;

  beforeAll(async () => {
    pair = await startScaleOutPair("rolling", "sk-rolling-upstream-0001");
    sql = new SQL(pair.config.database!);
  }, 60_000);

  afterAll(async () => {
    await sql?.close();
    await pair?.stop();
  });

  describe("an older instance beside a newer one", () => {
    test("a bus message of a kind it does not know (or a known kind it cannot read) drops its caches instead of being ignored", async () => {
      // An unknown kind, a known kind with a field of another type, and another encoding altogether.
      const messages = [
        (id: number) => JSON.stringify({ from: "a-newer-instance", event: { kind: "accounts-v2", accountIds: [id] } }),
        (id: number) => JSON.stringify({ from: "a-newer-instance", event: { kind: "account", accountId: String(id) } }),
        (id: number) => `v2|account|${id}`,
      ];
      for (const message of messages) {
        const { key, id } = await createAccount(pair.a, { CreditGranted: 1000 });
        // b reads the account once: it is cached there (for a minute).
        expect((await chat(pair, "b", key)).status).toBe(200);
        // A newer instance deletes it in a way this version announces differently.
        await sql`UPDATE accounts SET deleted_at = ${Date.now()} WHERE id = ${id}`;
        await pair.redisClient.send("PUBLISH", ["router:invalidation", message(id)]);
        await waitFor(async () => (await chat(pair, "b", key)).status === 401, 5000, `b to drop its caches on ${message(id)}`);
      }
      // Neither message stopped b from hearing the ones it knows.
      expect((await api(pair.b, "/healthz")).status).toBe(200);
    }, 30_000);
  });
}
