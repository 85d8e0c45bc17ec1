import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { hashApiKey, issueApiKey } from "../../src/accounts/api-keys.ts";
import { startRouter, tempDir, type TestRouter } from "../helpers/router.ts";

const ROUTING_ITEMS = ["MODEL_MAPPER", "LEVEL_MAPPER", "SWITCH_OVER"];

let router: TestRouter;
let memberKey: string;

beforeAll(async () => {
  router = await startRouter({ pricing: false });
  const issued = issueApiKey();
  const now = Date.now();
  await router.deps.store.accounts.insert(
    {
      parentId: 1,
      depth: 2,
      isOwner: false,
      email: "member@example.com",
      name: "member-one",
      keyHash: hashApiKey(issued.key),
      keyPrefix: issued.prefix,
      createdAt: now,
      updatedAt: now,
    },
    "/1/",
  );
  memberKey = issued.key;
});
afterAll(() => router.stop());
beforeEach(async () => {
  await router.deps.settings.reset(ROUTING_ITEMS);
});

function send(method: string, body?: unknown, init: { key?: string | null; raw?: string } = {}): Promise<Response> {
  const text = init.raw ?? (body === undefined ? undefined : JSON.stringify(body));
  return router.fetch("/x-config", {
    method,
    key: init.key,
    ...(text === undefined ? {} : { body: text, headers: { "content-type": "application/json" } }),
  });
}

async function getConfigs(): Promise<Record<string, unknown>> {
  const res = await send("GET");
  expect(res.status).toBe(200);
  return (await res.json()).configs;
}

async function expect400(res: Response, param?: string | null): Promise<{ message: string; param: string | null }> {
  expect(res.status).toBe(400);
  const body = await res.json();
  expect(body.error.type).toBe("invalid_request_error");
  if (param !== undefined) expect(body.error.param).toBe(param);
  return body.error;
}

describe("GET /x-config", () => {
  test("an unconfigured router exports an empty object", async () => {
    expect(await getConfigs()).toEqual({});
  });
});

describe("PUT /x-config", () => {
  test("the string form is stored and exported as the spec's comma-separated entries, in order and trimmed", async () => {
    const res = await send("PUT", {
      MODEL_MAPPER: " gpt-4* = gpt-4o , alias=claude-3-7-sonnet",
      LEVEL_MAPPER: "claude-*=2,*=1",
      SWITCH_OVER: "1=2,2=3",
    });
    expect(res.status).toBe(200);
    const expected = {
      MODEL_MAPPER: "gpt-4*=gpt-4o,alias=claude-3-7-sonnet",
      LEVEL_MAPPER: "claude-*=2,*=1",
      SWITCH_OVER: "1=2,2=3",
    };
    expect(await res.json()).toEqual({ configs: expected });
    expect(await getConfigs()).toEqual(expected);
  });

  test("the object form is accepted, and GET's output can be written back unchanged", async () => {
    const res = await send("PUT", { LEVEL_MAPPER: { "gpt-*": 3, "o4-*": "2" }, SWITCH_OVER: { "3": 1 } });
    expect(res.status).toBe(200);
    const configs = (await res.json()).configs;
    expect(configs).toEqual({ LEVEL_MAPPER: "gpt-*=3,o4-*=2", SWITCH_OVER: "3=1" });

    const again = await send("PUT", configs);
    expect(again.status).toBe(200);
    expect((await again.json()).configs).toEqual(configs);
  });

  test("a partial update changes only the named items", async () => {
    await send("PUT", { MODEL_MAPPER: "a=b", LEVEL_MAPPER: "b=2" });
    const res = await send("PUT", { LEVEL_MAPPER: "b=4" });
    expect(res.status).toBe(200);
    expect((await res.json()).configs).toEqual({ MODEL_MAPPER: "a=b", LEVEL_MAPPER: "b=4" });
  });

  test("an empty string (or object) clears an item's entries: the item stays set and exports as \"\"", async () => {
    await send("PUT", { MODEL_MAPPER: "a=b", LEVEL_MAPPER: "a=2" });
    const res = await send("PUT", { MODEL_MAPPER: "", LEVEL_MAPPER: {} });
    expect(res.status).toBe(200);
    expect((await res.json()).configs).toEqual({ MODEL_MAPPER: "", LEVEL_MAPPER: "" });
    expect(router.deps.settings.routing().modelMap).toEqual([]);
    expect(router.deps.settings.routing().levelMap).toEqual([]);
  });

  test("integer-like names keep the order written in the export (an object would put them first)", async () => {
    await send("PUT", { MODEL_MAPPER: "gpt-x=real-a,7=real-b", LEVEL_MAPPER: "claude-*=2,42=3,10=4", SWITCH_OVER: "3=1,2=3" });
    expect(await getConfigs()).toEqual({ MODEL_MAPPER: "gpt-x=real-a,7=real-b", LEVEL_MAPPER: "claude-*=2,42=3,10=4", SWITCH_OVER: "3=1,2=3" });
  });

  test('a name holding "," or "=" is 400 naming the item in the object form (the string form cannot say it)', async () => {
    await expect400(await send("PUT", { MODEL_MAPPER: { "a,b": "c" } }), "MODEL_MAPPER");
    await expect400(await send("PUT", { LEVEL_MAPPER: { "a=b": 2 } }), "LEVEL_MAPPER");
    await expect400(await send("PUT", { MODEL_MAPPER: { a: "b=c" } }), "MODEL_MAPPER");
    await expect400(await send("PUT", { MODEL_MAPPER: "a=b=c" }), "MODEL_MAPPER");
    expect(await getConfigs()).toEqual({});
  });

  test("one bad item in a multi-item PUT writes nothing", async () => {
    await send("PUT", { MODEL_MAPPER: "a=b", LEVEL_MAPPER: "a=1" });
    const before = await getConfigs();
    const routingBefore = router.deps.settings.routing();

    const res = await send("PUT", { MODEL_MAPPER: "x=y", LEVEL_MAPPER: "x=2", SWITCH_OVER: "1=2,2=1" });
    await expect400(res, "SWITCH_OVER");
    expect(await getConfigs()).toEqual(before);
    expect(router.deps.settings.routing()).toBe(routingBefore);
    expect(router.deps.settings.raw("MODEL_MAPPER")).toBe("a=b");

    // The bad item first, or an unknown item last: still nothing written.
    await expect400(await send("PUT", { LEVEL_MAPPER: "x=0", MODEL_MAPPER: "x=y" }), "LEVEL_MAPPER");
    await expect400(await send("PUT", { MODEL_MAPPER: "x=y", NOPE: "1" }), "NOPE");
    expect(await getConfigs()).toEqual(before);
  });

  test("an unknown item is 400 with the item as param", async () => {
    const error = await expect400(await send("PUT", { NOT_AN_ITEM: "a=b" }), "NOT_AN_ITEM");
    expect(error.message).toContain("NOT_AN_ITEM");
  });

  test("a malformed entry is 400 naming the item and the entry", async () => {
    const error = await expect400(await send("PUT", { MODEL_MAPPER: "good=x,broken" }), "MODEL_MAPPER");
    expect(error.message).toContain('"broken"');
    const star = await expect400(await send("PUT", { MODEL_MAPPER: { "gpt-*": "gpt-4*" } }), "MODEL_MAPPER");
    expect(star.message).toContain("gpt-*=gpt-4*");
    const level = await expect400(await send("PUT", { LEVEL_MAPPER: "m=1.5" }), "LEVEL_MAPPER");
    expect(level.message).toContain('"m=1.5"');
  });

  test("a SWITCH_OVER cycle or self-switch is 400; a chain is fine", async () => {
    const cycle = await expect400(await send("PUT", { SWITCH_OVER: "1=2,2=3,3=1" }), "SWITCH_OVER");
    expect(cycle.message).toContain("loops");
    await expect400(await send("PUT", { SWITCH_OVER: "2=2" }), "SWITCH_OVER");
    expect((await send("PUT", { SWITCH_OVER: "1=2,2=3" })).status).toBe(200);
  });

  test("a value of the wrong type is 400", async () => {
    await expect400(await send("PUT", { MODEL_MAPPER: null }), "MODEL_MAPPER");
    await expect400(await send("PUT", { LEVEL_MAPPER: ["a=1"] }), "LEVEL_MAPPER");
    await expect400(await send("PUT", { LEVEL_MAPPER: 3 }), "LEVEL_MAPPER");
  });

  test("an empty object, a non-object, invalid JSON and a missing body are 400", async () => {
    const empty = await expect400(await send("PUT", {}));
    expect(empty.message).toMatch(/item/);
    await expect400(await send("PUT", ["MODEL_MAPPER"]));
    await expect400(await send("PUT", undefined, { raw: "{MODEL_MAPPER:" }));
    await expect400(await send("PUT"));
    expect(await getConfigs()).toEqual({});
  });

  test("a change takes effect for the very next request's routing", async () => {
    expect(router.deps.settings.routing().levelMap).toEqual([]);
    await send("PUT", { MODEL_MAPPER: "alias=real-model", LEVEL_MAPPER: "real-*=3", SWITCH_OVER: "3=1" });
    const routing = router.deps.settings.routing();
    expect(routing.modelMap.map((r) => [r.pattern.source, r.target])).toEqual([["alias", "real-model"]]);
    expect(routing.levelMap.map((r) => [r.pattern.source, r.level])).toEqual([["real-*", 3]]);
    expect([...routing.switchOver]).toEqual([[3, 1]]);
  });

  test("each changed item is logged with the account, never with its value", async () => {
    const mark = router.logs.length;
    await send("PUT", { MODEL_MAPPER: "secret-looking-source=secret-looking-target", LEVEL_MAPPER: "zz=7" });
    const lines = router.logs.slice(mark).filter((l) => l.includes("config changed"));
    expect(lines).toHaveLength(2);
    expect(lines.some((l) => /item=MODEL_MAPPER by=1\b/.test(l))).toBe(true);
    expect(lines.some((l) => /item=LEVEL_MAPPER by=1\b/.test(l))).toBe(true);
    const text = router.logs.slice(mark).join("\n");
    expect(text).not.toContain("secret-looking");
    expect(text).not.toContain("zz=7");

    // Writing the same value again is not a change.
    const again = router.logs.length;
    await send("PUT", { LEVEL_MAPPER: "zz=7" });
    expect(router.logs.slice(again).filter((l) => l.includes("config changed"))).toEqual([]);
  });
});

describe("DELETE /x-config", () => {
  test("keys resets the named items only and returns the full export", async () => {
    await send("PUT", { MODEL_MAPPER: "a=b", LEVEL_MAPPER: "b=2", SWITCH_OVER: "1=2" });
    const mark = router.logs.length;
    const res = await send("DELETE", { keys: ["MODEL_MAPPER", "SWITCH_OVER"] });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ configs: { LEVEL_MAPPER: "b=2" } });
    expect(await getConfigs()).toEqual({ LEVEL_MAPPER: "b=2" });
    expect(router.deps.settings.routing().modelMap).toEqual([]);
    expect(router.deps.settings.routing().switchOver.size).toBe(0);
    const lines = router.logs.slice(mark).filter((l) => l.includes("config changed"));
    expect(lines).toHaveLength(2);
    expect(lines.every((l) => / by=1\b/.test(l))).toBe(true);
  });

  test("resetting an item that is not set succeeds and changes nothing", async () => {
    const res = await send("DELETE", { keys: ["MODEL_MAPPER"] });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ configs: {} });
  });

  test("an unknown name resets nothing", async () => {
    await send("PUT", { MODEL_MAPPER: "a=b" });
    await expect400(await send("DELETE", { keys: ["MODEL_MAPPER", "NOPE"] }), "NOPE");
    expect(await getConfigs()).toEqual({ MODEL_MAPPER: "a=b" });
  });

  test("keys must be a non-empty array of names; other fields and malformed JSON are refused", async () => {
    await expect400(await send("DELETE", { keys: [] }), "keys");
    await expect400(await send("DELETE", { keys: "MODEL_MAPPER" }), "keys");
    await expect400(await send("DELETE", { keys: [1] }), "keys");
    await expect400(await send("DELETE", {}), "keys");
    await expect400(await send("DELETE", { keys: ["MODEL_MAPPER"], extra: true }), "extra");
    await expect400(await send("DELETE", undefined, { raw: "{keys" }));
    await expect400(await send("DELETE", ["MODEL_MAPPER"]));
  });
});

describe("access", () => {
  test("a non-owner account is 403 on every method", async () => {
    for (const [method, body] of [["GET"], ["PUT", { MODEL_MAPPER: "a=b" }], ["DELETE", { keys: ["MODEL_MAPPER"] }]] as const) {
      const res = await send(method, body, { key: memberKey });
      expect(res.status).toBe(403);
      expect((await res.json()).error.type).toBe("permission_error");
    }
    expect(await getConfigs()).toEqual({});
  });

  test("a missing key is 401 on every method", async () => {
    for (const method of ["GET", "PUT", "DELETE"]) {
      const res = await send(method, method === "PUT" ? { MODEL_MAPPER: "a=b" } : undefined, { key: null });
      expect(res.status).toBe(401);
      expect((await res.json()).error.type).toBe("authentication_error");
    }
  });
});

describe("persistence", () => {
  test("values survive a restart on the same data directory", async () => {
    const dataDir = tempDir();
    try {
      const first = await startRouter({ dataDir });
      const written = await first.fetch("/x-config", {
        method: "PUT",
        body: JSON.stringify({ MODEL_MAPPER: "alias=real", LEVEL_MAPPER: { "real*": 2 }, SWITCH_OVER: "2=1" }),
      });
      expect(written.status).toBe(200);
      const configs = (await written.json()).configs;
      await first.stop();

      const second = await startRouter({ dataDir });
      try {
        const res = await second.fetch("/x-config");
        expect((await res.json()).configs).toEqual(configs);
        expect(second.deps.settings.routing().levelMap.map((r) => r.level)).toEqual([2]);
        expect([...second.deps.settings.routing().switchOver]).toEqual([[2, 1]]);
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
