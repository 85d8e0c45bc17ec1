import { describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { api, createAccount, MANAGER_RESOURCES } from "../helpers/owner-ops.ts";
import { startPostgres } from "../helpers/postgres-server.ts";
import type { TestRouter } from "../helpers/router.ts";
import { perTest } from "../helpers/scoped.ts";
import { mapperEntries } from "../../src/wire/mapper-text.ts";

/**
 * Bad input and partial failure in the management API, from a review (each of the
 * first groups failed before its fix): clear 400s naming the field, and nothing half
 * written, no log row for a write that did not happen; the last group holds what the
 * review checked and found right.
 */

const scope = perTest();

/** A request with a body sent exactly as given (for `__proto__` keys and lone surrogates, which JSON.stringify cannot express). */
async function rawJson(r: TestRouter, path: string, method: string, body: string): Promise<{ status: number; body: any }> {
  const res = await r.fetch(path, { method, headers: { "content-type": "application/json" }, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

interface LogRow {
  action: string;
  target_id: number | null;
  details: Record<string, unknown>;
}
const oplog = async (r: TestRouter, query = ""): Promise<LogRow[]> => {
  const res = await api(r, `/dashboard/logs?size=100${query}`);
  if (res.status !== 200) throw new Error(`oplog: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.logs;
};
const effectiveModel = async (r: TestRouter, model: string): Promise<string> => {
  const res = await api(r, `/x-route?model=${encodeURIComponent(model)}`);
  if (res.status !== 200) throw new Error(`route: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.effective_model;
};
const exportConfig = async (r: TestRouter): Promise<Record<string, any>> => (await api(r, "/x-config")).body.configs;

/**
 * Sends a request head (and the start of a body) on a raw socket and resolves with the
 * status line of the answer, or "no answer" after `waitMs`.
 */
function statusLineOf(url: string, head: string, bodyStart: string, waitMs: number): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let got = "";
    const done = (answer: string) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done(got.split("\r\n")[0] || "no answer"), waitMs);
    socket.on("data", (chunk) => {
      got += chunk.toString();
      if (got.includes("\r\n")) done(got.split("\r\n")[0]!);
    });
    socket.on("error", () => done(got.split("\r\n")[0] || "socket error"));
    socket.write(head + bodyStart);
  });
}

// ---------------------------------------------------------------------------
// Findings (failing tests)
// ---------------------------------------------------------------------------

describe("numbers past their bounds", () => {
  // docs/api.md "Credit": "`Days` (1 or more) makes the added credit expire that many days later."
  // Product rule: bad input gets a clear 400, and nothing half-written. A Days value whose
  // expiry no Date can hold (> ~1e8 days) is accepted and stored; from then on every read
  // of that grant fails with a 500, and the poisoned grant travels to the parent on deletion.
  test("a Days value past a hundred years is a 400 naming Days, on update, batch credit and creation; reads keep working", async () => {
    const r = await scope.router();
    const child = await createAccount(r);
    for (const [path, method, body] of [
      [`/x-users/${child.id}`, "PUT", { CreditGranted: 1, Days: 1e9 }],
      ["/x-users/batch-credit", "POST", { IDs: [child.id], CreditGranted: 1, Days: 9007199254740991 }],
      ["/x-users", "POST", { Email: `days-${Date.now()}@example.com`, CreditGranted: 2, Days: 5e8 }],
    ] as const) {
      const res = await api(r, path, { method, body });
      expect([path, res.status, res.body.error?.param]).toEqual([path, 400, "Days"]);
    }
    // The largest allowed is kept, and every credit read works (before, an expiry no date can hold made them 500).
    expect((await api(r, `/x-users/${child.id}`, { method: "PUT", body: { CreditGranted: 1, Days: 36_500 } })).status).toBe(200);
    expect((await api(r, "/dashboard/credit", { key: child.key })).status).toBe(200);
    expect((await api(r, `/x-users/${child.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await api(r, "/dashboard/credit")).status).toBe(200);
  });
});

describe("partial failure of a batch", () => {
  // docs/api.md "Batch credit": "Each entry is applied in its own transaction or skipped
  // with a reason ...; the request itself succeeds" and "The operation log gets one row
  // per changed account." Product rule: no credit moved without its ledger entry; a
  // request that fails midway leaves the database as before.
  // On PostgreSQL (where other requests run between the batch's transactions), a
  // rotation of the caller's key mid-batch makes the batch answer 401 after it already
  // moved credit, and the operation-log rows of the entries it applied are never written.
  test(
    "PostgreSQL: a batch interrupted by the caller's key rotation answers for what it applied, and each applied entry has its log row",
    async () => {
      const postgres = await startPostgres();
      scope.later(() => postgres.stop());
      const r = await scope.router({ config: { database: postgres.url(await postgres.createDatabase()) } });
      const manager = await createAccount(r, { Resources: MANAGER_RESOURCES, CreditGranted: 100 });
      const child = await createAccount(r, {}, manager.key);
      // The child first, then 999 unknown IDs (skipped, each still its own transaction): a batch long enough to rotate during.
      const ids = [child.id, ...Array.from({ length: 999 }, (_, i) => 1_000_000 + i)];
      const batch = api(r, "/x-users/batch-credit", { key: manager.key, body: { IDs: ids, CreditGranted: 5 } });
      // Once the child's entry committed, the manager rotates its own key.
      const deadline = Date.now() + 10_000;
      while ((await api(r, `/x-dna/${child.id}`)).body.Balance !== 5 && Date.now() < deadline) await Bun.sleep(2);
      const rotated = await api(r, "/x-self", { key: manager.key, body: { confirm: `${r.deps.clock.businessDate()}-ROTATE-SELF` } });
      expect(rotated.status).toBe(200);
      const answer = await batch;

      const childBalance = (await api(r, `/x-dna/${child.id}`)).body.Balance;
      const batchRows = (await oplog(r, "&action=account.batch_credit")).filter((row) => row.target_id === child.id);
      // What the batch did must be what it said and what the log says: applied with its row, or nothing moved.
      expect({ status: answer.status, childBalance, batchRows: batchRows.length }).toEqual(
        answer.status === 200 ? { status: 200, childBalance: 5, batchRows: 1 } : { status: answer.status, childBalance: 0, batchRows: 0 },
      );
    },
    60_000,
  );
});

describe("Idempotency-Key misuse", () => {
  // docs/api.md "Error envelopes": "Body over `--max-body`: 413, refused from
  // `Content-Length` before reading or while reading an undeclared body; never buffered
  // whole." With an Idempotency-Key header the fingerprint (request.clone().arrayBuffer())
  // reads the whole body first, whatever its size: no 413, the server waits for (and
  // buffers) all 100 MB.
  test("a declared body over --max-body is refused at once, with an Idempotency-Key too (the fingerprint reads no more than the route would)", async () => {
    const r = await scope.router({ config: { maxBody: 64 * 1024 } });
    const host = new URL(r.url).host;
    const head = (extra: string) =>
      `POST /x-users HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${r.ownerKey}\r\n` +
      `Content-Type: application/json\r\nContent-Length: 100000000\r\n${extra}\r\n`;
    const without = await statusLineOf(r.url, head(""), '{"Email":"', 3000);
    const withKey = await statusLineOf(r.url, head("Idempotency-Key: big-body-1\r\n"), '{"Email":"', 3000);
    expect(without).toBe("HTTP/1.1 413 Payload Too Large");
    expect(withKey).toBe("HTTP/1.1 413 Payload Too Large");
  });
});

describe("config export/import round trips", () => {
  // docs/api.md "Configuration items": "`PUT` accepts this export back unchanged" and
  // "Patterns": "ties go to the earlier entry" (an exact name: "first the exact entry").
  // A mapper written with the same source twice routes by the FIRST entry but exports
  // (an object) the LAST one; importing the export then silently re-routes the model.
  test("MODEL_MAPPER with a repeated source is refused: the export and routing never disagree", async () => {
    const r = await scope.router();
    const put = await api(r, "/x-config", { method: "PUT", body: { MODEL_MAPPER: "dup-model=target-a,dup-model=target-b" } });
    if (put.status === 400) {
      // Refusing duplicates (as SWITCH_OVER does for a repeated primary) would also be fine.
      expect(put.body.error.param).toBe("MODEL_MAPPER");
      return;
    }
    const routed = await effectiveModel(r, "dup-model");
    expect(mapperEntries((await exportConfig(r)).MODEL_MAPPER).find((e) => e.left === "dup-model")?.right).toBe(routed);
    expect((await api(r, "/x-config", { method: "PUT", body: await exportConfig(r) })).status).toBe(200);
    expect(await effectiveModel(r, "dup-model")).toBe(routed);
  });

  // A value stored before repeats were refused still loads: the export shows the entry
  // routing uses (the first), and importing that export back is the same value.
  test("a repeated source already stored exports as routing reads it and imports back with no log row", async () => {
    const r = await scope.router();
    await r.deps.store.settings.put(r.deps.tenantId, [["MODEL_MAPPER", "dup-model=target-a,other=x,dup-model=target-b"]], Date.now());
    await r.deps.settings.reload();
    expect(await effectiveModel(r, "dup-model")).toBe("target-a");
    const exported = await exportConfig(r);
    expect(exported.MODEL_MAPPER).toBe("dup-model=target-a,other=x");
    const before = (await oplog(r, "&action=config.update")).length;
    expect((await api(r, "/x-config", { method: "PUT", body: exported })).status).toBe(200);
    expect(await oplog(r, "&action=config.update")).toHaveLength(before);
    expect(await effectiveModel(r, "dup-model")).toBe("target-a");
  });

  // docs/api.md "Unknown fields and reserved names": names a client chooses are "ordinary
  // names where any name is allowed". A mapper source "__proto__" is stored and routes,
  // but GET /x-config (built with out[left] = right on a plain object) drops it, so the
  // export hides a live mapping and an export/import round trip deletes it.
  test('a MODEL_MAPPER source named "__proto__" routes, is exported and survives a round trip', async () => {
    const r = await scope.router();
    const put = await rawJson(r, "/x-config", "PUT", '{"MODEL_MAPPER":{"__proto__":"proto-target","other":"other-target"}}');
    expect(put.status).toBe(200);
    expect(await effectiveModel(r, "__proto__")).toBe("proto-target");
    const exported = await exportConfig(r);
    expect(exported.MODEL_MAPPER).toBe("__proto__=proto-target,other=other-target");
    await api(r, "/x-config", { method: "PUT", body: exported });
    expect(await effectiveModel(r, "__proto__")).toBe("proto-target");
  });

  // docs/api.md: "Rewriting an unchanged value ... writes no row" and "`PUT` accepts this
  // export back unchanged". Mapper exports were JS objects, which put integer-like keys
  // first, so importing one reordered the stored text and logged config.update rows whose
  // before and after were identical; the text export keeps the order, and an object written
  // with integer-like names is still the same value as the text it reorders.
  test("importing the export unchanged writes no config.update row, integer-like model names included", async () => {
    const r = await scope.router();
    expect((await api(r, "/x-config", { method: "PUT", body: { MODEL_MAPPER: "gpt-x=real-a,7=real-b", LEVEL_MAPPER: "claude-*=2,42=3" } })).status).toBe(200);
    const exported = await exportConfig(r);
    const before = (await oplog(r, "&action=config.update")).length;
    expect((await api(r, "/x-config", { method: "PUT", body: exported })).status).toBe(200);
    const added = (await oplog(r, "&action=config.update")).slice(0, (await oplog(r, "&action=config.update")).length - before);
    expect(added.map((row) => row.details)).toEqual([]);
    expect(exported).toMatchObject({ MODEL_MAPPER: "gpt-x=real-a,7=real-b", LEVEL_MAPPER: "claude-*=2,42=3" });
    // The object form (as earlier exports were) puts "7" first: routing reads it alike, so still no change.
    expect((await api(r, "/x-config", { method: "PUT", body: { MODEL_MAPPER: { "gpt-x": "real-a", "7": "real-b" } } })).status).toBe(200);
    expect(await oplog(r, "&action=config.update")).toHaveLength(before);
    expect(await exportConfig(r)).toEqual(exported);
  });
});

describe("limits named __proto__", () => {
  // docs/api.md "Unknown fields and reserved names": client-chosen names are "ordinary
  // names where any name is allowed" (a PRICING model may be called `__proto__`). A
  // ModelLimits / MODEL_LIMITS pattern "__proto__" is answered 200/201 but silently
  // dropped (parseModelLimits assigns out["__proto__"], which sets the prototype): the
  // limit the owner set is not enforced and not shown. Either keep it or refuse it (400).
  test('MODEL_LIMITS {"__proto__": {"rpm": 1}} is kept like any pattern', async () => {
    const r = await scope.router();
    const put = await rawJson(r, "/x-config", "PUT", '{"MODEL_LIMITS":{"__proto__":{"rpm":1},"other-*":{"rpm":2}}}');
    const kept = put.status === 200 && Object.hasOwn(put.body.configs.MODEL_LIMITS ?? {}, "__proto__");
    expect({ status: put.status, kept }).toEqual(put.status === 400 ? { status: 400, kept: false } : { status: 200, kept: true });
  });

  test('an account created with ModelLimits {"__proto__": {...}} keeps that limit', async () => {
    const r = await scope.router();
    const res = await rawJson(r, "/x-users", "POST", '{"Email":"proto-limits@example.com","ModelLimits":{"__proto__":{"rpm":1}}}');
    if (res.status === 400) {
      expect(res.body.error.param).toBe("ModelLimits");
      return;
    }
    expect(res.status).toBe(201);
    expect(Object.hasOwn(res.body.ModelLimits, "__proto__")).toBe(true);
  });
});

describe("no operation-log row for a write that did not happen", () => {
  // Product rule: "no operation-log row for a write that did not happen"; the batch endpoint
  // already refuses a credit below one nano-credit because it "would change nothing yet be
  // logged as a change" (src/accounts/batch-credit.ts). PUT /x-users with nothing to
  // change answers 200 and logs an account.update row anyway (fields [], credit 0).
  test("PUT /x-users/{id} with {} or CreditGranted 0 changes nothing and writes no account.update row", async () => {
    const r = await scope.router();
    const child = await createAccount(r);
    const recordBefore = (await api(r, `/x-users/${child.id}`)).body;
    const rowsBefore = (await oplog(r, `&target=${child.id}`)).length;
    const empty = await api(r, `/x-users/${child.id}`, { method: "PUT", body: {} });
    const zero = await api(r, `/x-users/${child.id}`, { method: "PUT", body: { CreditGranted: 0 } });
    expect((await api(r, `/x-users/${child.id}`)).body).toEqual(recordBefore);
    const added = (await oplog(r, `&target=${child.id}`)).slice(0, (await oplog(r, `&target=${child.id}`)).length - rowsBefore);
    // Refused (400) or accepted as the no-op it is: either way no row.
    expect({ statuses: [empty.status, zero.status].map((s) => (s === 400 || s === 200 ? "ok" : s)), added: added.map((row) => row.details) }).toEqual({
      statuses: ["ok", "ok"],
      added: [],
    });
  });
});

describe("strings", () => {
  // Spec 2.2: "Email: Required; valid". A lone UTF-16 surrogate is not text at all (it has
  // no UTF-8 form); the address is accepted and silently stored as another one (U+FFFD),
  // so what the caller sent is not what was saved (and two different addresses collide).
  test("an Email with a lone surrogate is a 400 naming Email (stored, it would become another address)", async () => {
    const r = await scope.router();
    const res = await rawJson(r, "/x-users", "POST", '{"Email":"\\ud800abc@example.com"}');
    if (res.status === 201) {
      // Had it been accepted, it should at least be the address sent.
      // (compared as code units: the surrogate D800 came back as FFFD)
      expect(res.body.Email.charCodeAt(0).toString(16)).toBe("d800");
    }
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe("Email");
  });
});

// ---------------------------------------------------------------------------
// Checked and fine (passing): suspicions that did not hold
// ---------------------------------------------------------------------------

describe("what the review checked and found right", () => {
  // Malformed query parameters on the operation log and the request log are 400 naming them.
  test("bad page, size, since/until, target and status values are 400 with param", async () => {
    const r = await scope.router();
    const cases: Array<[string, string]> = [
      ["/dashboard/logs?page=0", "page"],
      ["/dashboard/logs?size=1000", "size"],
      ["/dashboard/logs?since=2025-02-30", "since"],
      ["/dashboard/logs?since=2025-01-01T25:00Z", "since"],
      ["/dashboard/logs?since=2025-02-01&until=2025-01-01", "since"],
      ["/dashboard/logs?target=1e3", "target"],
      ["/dashboard/logs?target=99999999999999999999", "target"],
      ["/x-requests?status=6xx", "status"],
      ["/x-requests?size=101", "size"],
      ["/x-requests?key_id=0", "key_id"],
    ];
    for (const [path, param] of cases) {
      const res = await api(r, path);
      expect({ path, status: res.status, param: res.body?.error?.param }).toEqual({ path, status: 400, param });
    }
  });

  // Path ids that are not positive safe integers: 400 (keys) or 404 (accounts, notices), never 500.
  test("path ids: non-integers and ids past 2^53 are 400 or 404, never 500", async () => {
    const r = await scope.router();
    for (const id of ["0", "-1", "abc", "1e3", "99999999999999999999", "9007199254740993", "%00", "1.0"]) {
      expect((await api(r, `/x-keys/${id}`)).status).toBe(400);
      expect((await api(r, `/x-users/${id}`)).status).toBe(404);
      expect((await api(r, `/x-news/${id}`, { method: "DELETE" })).status).toBe(404);
    }
  });

  // A missing or unusual Content-Type does not change how the JSON body is read.
  test("management bodies are read as JSON whatever the Content-Type", async () => {
    const r = await scope.router();
    for (const type of [undefined, "text/plain", "application/x-www-form-urlencoded"]) {
      const res = await r.fetch("/x-users", {
        method: "POST",
        headers: type ? { "content-type": type } : {},
        body: JSON.stringify({ Email: `ctype-${Math.random().toString(36).slice(2, 8)}@example.com` }),
      });
      expect(res.status).toBe(201);
    }
  });

  // SQLite serialises transactions: racing grants, deductions and deletions keep every credit.
  test("a manager's grants and deductions racing the owner's deletions: no credit lost or created", async () => {
    const r = await scope.router();
    const manager = await createAccount(r, { Resources: MANAGER_RESOURCES, CreditGranted: 100 });
    const children = [];
    for (let i = 0; i < 10; i++) children.push(await createAccount(r, {}, manager.key));
    await Promise.all(
      children.flatMap((c) => [
        api(r, `/x-users/${c.id}`, { method: "PUT", key: manager.key, body: { CreditGranted: 3 } }),
        api(r, `/x-users/${c.id}`, { method: "DELETE" }),
        api(r, `/x-users/${c.id}`, { method: "PUT", key: manager.key, body: { CreditGranted: -1 } }),
      ]),
    );
    const live = (await api(r, "/x-dna?size=100", { key: manager.key })).body as Array<{ Balance: number }>;
    const total = (await api(r, "/dashboard/status", { key: manager.key })).body.balance + live.reduce((sum, a) => sum + a.Balance, 0);
    expect(total).toBe(100);
  });

  // A refused multi-field creation (one bad field among good ones) writes no account and no log row.
  test("a creation with one invalid field among valid ones writes nothing", async () => {
    const r = await scope.router();
    const rowsBefore = (await oplog(r)).length;
    const res = await api(r, "/x-users", { body: { Email: "mixed@example.com", Alias: "ok", RPM: 5, DailyLimit: -1 } });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe("DailyLimit");
    expect((await api(r, "/x-users?email=mixed@example.com")).body).toEqual([]);
    expect((await oplog(r)).length).toBe(rowsBefore);
  });
});
