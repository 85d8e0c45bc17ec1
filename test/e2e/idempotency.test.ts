import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createManualClock } from "../../src/core/clock.ts";
import { createAccount } from "../helpers/owner-ops.ts";
import { startRouter, type TestRouter } from "../helpers/router.ts";

/**
 * Management writes sent with an Idempotency-Key run once per account and key: a retry
 * after a lost answer (a timeout, a webhook delivered twice) gets the first answer
 * again and writes nothing (docs/api.md, "Idempotent writes").
 */

interface Reply {
  status: number;
  body: any;
  replayed: string | null;
}

function client(router: TestRouter) {
  return async (path: string, init: { method?: string; body?: unknown; key?: string; idempotencyKey?: string } = {}): Promise<Reply> => {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (init.idempotencyKey !== undefined) headers["idempotency-key"] = init.idempotencyKey;
    const res = await router.fetch(path, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      key: init.key,
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, replayed: res.headers.get("idempotent-replayed") };
  };
}

describe("idempotent management writes", () => {
  let router: TestRouter;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    router = await startRouter();
    api = client(router);
  });
  afterAll(() => router.stop());

  const balanceOf = async (id: number) => (await api(`/x-dna/${id}`)).body.Balance as number;
  const grants = async (id: number) => (await api(`/dashboard/logs?size=100`)).body.logs.filter((entry: any) => entry.action === "account.update" && entry.target_id === id);

  test("a credit grant sent twice with one key is granted once; the retry gets the first answer, marked as replayed", async () => {
    const account = await createAccount(router);
    const first = await api(`/x-users/${account.id}`, { method: "PUT", body: { CreditGranted: 5 }, idempotencyKey: "grant-7f3a" });
    expect(first.status).toBe(200);
    expect(first.replayed).toBeNull();
    const again = await api(`/x-users/${account.id}`, { method: "PUT", body: { CreditGranted: 5 }, idempotencyKey: "grant-7f3a" });
    expect(again.status).toBe(200);
    expect(again.replayed).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await balanceOf(account.id)).toBe(5);
    expect(await grants(account.id)).toHaveLength(1);
    // Without a key, a resend is a second grant, as before.
    await api(`/x-users/${account.id}`, { method: "PUT", body: { CreditGranted: 5 } });
    await api(`/x-users/${account.id}`, { method: "PUT", body: { CreditGranted: 5 } });
    expect(await balanceOf(account.id)).toBe(15);
  });

  test("a batch credit delivered twice (a payment webhook retried) is applied once", async () => {
    const [a, b] = [await createAccount(router), await createAccount(router)];
    const body = { IDs: [a.id, b.id], CreditGranted: 2 };
    const first = await api("/x-users/batch-credit", { body, idempotencyKey: "evt_1PqR8s" });
    expect(first.status).toBe(200);
    const again = await api("/x-users/batch-credit", { body, idempotencyKey: "evt_1PqR8s" });
    expect(again.replayed).toBe("true");
    expect(again.body).toEqual(first.body);
    expect([await balanceOf(a.id), await balanceOf(b.id)]).toEqual([2, 2]);
  });

  test("the same key with another request is 422 and writes nothing; another account's same key is its own", async () => {
    const account = await createAccount(router);
    expect((await api(`/x-users/${account.id}`, { method: "PUT", body: { CreditGranted: 1 }, idempotencyKey: "k-reuse" })).status).toBe(200);
    const otherBody = await api(`/x-users/${account.id}`, { method: "PUT", body: { CreditGranted: 9 }, idempotencyKey: "k-reuse" });
    expect(otherBody.status).toBe(422);
    expect(otherBody.body.error.code).toBe("idempotency_key_reused");
    const otherPath = await api(`/x-users/${account.id}`, { method: "DELETE", idempotencyKey: "k-reuse" });
    expect(otherPath.status).toBe(422);
    expect(await balanceOf(account.id)).toBe(1);
    // A manager's key of the same name is the manager's own.
    const manager = await createAccount(router, { CreditGranted: 50, Resources: "/x-users*,/x-dna*,/dashboard/*" });
    const child = await createAccount(router, {}, manager.key);
    const managerGrant = await api(`/x-users/${child.id}`, { method: "PUT", key: manager.key, body: { CreditGranted: 3 }, idempotencyKey: "k-reuse" });
    expect(managerGrant.status).toBe(200);
    expect(managerGrant.replayed).toBeNull();
    expect(await balanceOf(child.id)).toBe(3);
  });

  test("a malformed key is 400 naming the header, and nothing is written", async () => {
    const account = await createAccount(router);
    for (const key of ["", "has space", "x".repeat(256), "naïve"]) {
      const reply = await api(`/x-users/${account.id}`, { method: "PUT", body: { CreditGranted: 1 }, idempotencyKey: key });
      expect(reply.status).toBe(400);
      expect(reply.body.error.param).toBe("Idempotency-Key");
    }
    expect(await balanceOf(account.id)).toBe(0);
    expect((await api(`/x-users/${account.id}`, { method: "PUT", body: { CreditGranted: 1 }, idempotencyKey: "x".repeat(255) })).status).toBe(200);
  });

  test("a refusal is kept too: the retry of a 404 is the same 404, replayed", async () => {
    const first = await api("/x-users/987654", { method: "PUT", body: { CreditGranted: 1 }, idempotencyKey: "missing-1" });
    expect(first.status).toBe(404);
    const again = await api("/x-users/987654", { method: "PUT", body: { CreditGranted: 1 }, idempotencyKey: "missing-1" });
    expect(again.status).toBe(404);
    expect(again.replayed).toBe("true");
    expect(again.body).toEqual(first.body);
  });

  test("an answer holding a new API key is not kept: the retry is told so, one account exists, and the key is nowhere on disk", async () => {
    const email = "idem-created@example.com";
    const first = await api("/x-users", { body: { Email: email }, idempotencyKey: "create-1" });
    expect(first.status).toBe(201);
    const key = first.body.APIKey as string;
    const again = await api("/x-users", { body: { Email: email }, idempotencyKey: "create-1" });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("idempotency_answer_not_kept");
    expect(again.body.error.message).toContain("shown only once");
    expect((await api(`/x-dna?email=${encodeURIComponent(email)}`)).body).toHaveLength(1);
    // The new account's key works, and its text is in no file of the data directory.
    expect((await api("/dashboard/status", { key })).status).toBe(200);
    for (const name of readdirSync(router.dataDir)) {
      if (!name.startsWith("router")) continue;
      expect(readFileSync(join(router.dataDir, name)).includes(Buffer.from(key))).toBe(false);
    }
  });

  test("a provider key's record (its secret in it) is replayed, and kept sealed: the secret is on no file in the clear", async () => {
    const secret = "sk-idempotent-provider-secret-0123456789";
    const body = { Provider: "https://api.openai.com/v1", SecretKey: secret, Level: 4, Status: true };
    const first = await api("/x-keys", { body, idempotencyKey: "key-create-1" });
    expect(first.status).toBe(201);
    const again = await api("/x-keys", { body, idempotencyKey: "key-create-1" });
    expect(again.status).toBe(201);
    expect(again.replayed).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(again.body.SecretKey).toBe(secret);
    for (const name of readdirSync(router.dataDir)) {
      if (!name.startsWith("router")) continue;
      expect(readFileSync(join(router.dataDir, name)).includes(Buffer.from(secret))).toBe(false);
    }
  });

  test("requests without a valid API key are refused as without the header", async () => {
    const reply = await api("/x-users/1", { method: "PUT", key: "sk-not-a-key", body: { CreditGranted: 1 }, idempotencyKey: "anon-1" });
    expect(reply.status).toBe(401);
  });
});

/** The bytes of the router's database files (what a copy or a backup holds). */
function databaseBytes(r: TestRouter): Buffer[] {
  return ["router.db", "router.db-wal"].map((f) => join(r.dataDir, f)).filter(existsSync).map((f) => readFileSync(f));
}

const sha256 = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest("hex");

describe("fingerprints are keyed with the deployment's secret", () => {
  let router: TestRouter;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    router = await startRouter();
    api = client(router);
  });
  afterAll(() => router.stop());

  test("a PUT /x-config of EMAIL_PASS (as the console and CLI send it, with an Idempotency-Key) leaves no unsalted SHA-256 of the password in the database", async () => {
    // A password an offline dictionary attack guesses at once.
    const PASSWORD = "Summer2024!";
    const body = JSON.stringify({ EMAIL_PASS: PASSWORD });
    const res = await router.fetch("/x-config", { method: "PUT", headers: { "content-type": "application/json", "idempotency-key": "console-0123456789abcdef" }, body });
    expect(res.status).toBe(200);
    await res.text();
    // Whoever holds a copy of the database would confirm a guess without the deployment's secret key:
    const guess = sha256(`PUT /x-config\n${JSON.stringify({ EMAIL_PASS: PASSWORD })}`);
    const bytes = databaseBytes(router);
    expect(bytes.length).toBeGreaterThan(0);
    // The password itself is sealed; its fast unsalted hash must not be there either.
    for (const b of bytes) expect(b.includes(Buffer.from(PASSWORD))).toBe(false);
    for (const b of bytes) expect(b.includes(Buffer.from(guess))).toBe(false);
    // The keyed fingerprint still does its work: the retry replays, another body is refused.
    const retry = await router.fetch("/x-config", { method: "PUT", headers: { "content-type": "application/json", "idempotency-key": "console-0123456789abcdef" }, body });
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    const other = await router.fetch("/x-config", { method: "PUT", headers: { "content-type": "application/json", "idempotency-key": "console-0123456789abcdef" }, body: JSON.stringify({ EMAIL_PASS: "Winter2024!" }) });
    expect(other.status).toBe(422);
    expect(((await other.json()) as any).error.code).toBe("idempotency_key_reused");
  });

  test("a PUT /x-keys/{id} rotating to a 22-character secret: its fingerprint plus PartialKey's 20-character tail do not give the secret back from a database copy", async () => {
    const created = await api("/x-keys", { body: { Provider: "https://api.example.com/v1", SecretKey: "sk-initial-0123456789abcdef", Level: 1, Status: true } });
    expect(created.status).toBe(201);
    const SECRET = "Q7xk-22chars-Vb2Lp9Tz4"; // valid (at least 20 characters), 2 characters beyond the tail PartialKey shows
    expect(SECRET.length).toBe(22);
    const res = await api(`/x-keys/${created.body.ID}`, { method: "PUT", body: { SecretKey: SECRET }, idempotencyKey: "console-fedcba9876543210" });
    expect(res.status).toBe(200);
    // What an attacker with a database copy (no secret key) has: the summary's tail and the 64-hex fingerprints.
    const tail = ((await api(`/x-keys/${created.body.ID}?fields=summary`)).body.PartialKey as string).slice(1);
    const hexes = new Set<string>();
    for (const b of databaseBytes(router)) {
      for (const m of b.toString("latin1").matchAll(/[0-9a-f]{64,}/g)) for (let i = 0; i + 64 <= m[0].length; i++) hexes.add(m[0].slice(i, i + 64));
    }
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let recovered: string | undefined;
    for (const a of alphabet) {
      for (const b of alphabet) {
        const candidate = a + b + tail;
        if (hexes.has(sha256(`PUT /x-keys/${created.body.ID}\n${JSON.stringify({ SecretKey: candidate })}`))) recovered = candidate;
      }
    }
    expect(recovered).toBeUndefined();
    // The retry of that rotation is still a replay.
    const again = await api(`/x-keys/${created.body.ID}`, { method: "PUT", body: { SecretKey: SECRET }, idempotencyKey: "console-fedcba9876543210" });
    expect(again.status).toBe(200);
    expect(again.replayed).toBe("true");
  });
});

describe("idempotency keys expire", () => {
  test("a day later the same key runs the request again", async () => {
    const clock = createManualClock(Date.UTC(2026, 10, 20, 12));
    const router = await startRouter({ clock });
    try {
      const api = client(router);
      const account = await createAccount(router);
      const grant = () => api(`/x-users/${account.id}`, { method: "PUT", body: { CreditGranted: 4 }, idempotencyKey: "daily-grant" });
      expect((await grant()).replayed).toBeNull();
      clock.advance(23 * 3_600_000);
      expect((await grant()).replayed).toBe("true");
      clock.advance(3_600_001);
      expect((await grant()).replayed).toBeNull();
      expect((await api(`/x-dna/${account.id}`)).body.Balance).toBe(8);
    } finally {
      await router.stop();
    }
  });
});
