import { describe, expect, test } from "bun:test";
import { createLogger } from "../../src/core/log.ts";
import { catalogModels, createModelDirectory, knownProvider } from "../../src/gateway/model-directory.ts";
import { CATALOG } from "../../src/metering/pricing/price-book.ts";
import type { PoolKey } from "../../src/routing/pool-key.ts";
import type { ProviderConfig } from "../../src/routing/provider-config.ts";
import { poolKey } from "../helpers/pool-key.ts";

const key = (id: number, provider: string, config: ProviderConfig = { provider_type: "standard" }): PoolKey =>
  poolKey({ id, provider, config, secret: `secret-${id}-0123456789` });

function directory(answer: (url: string, init: RequestInit) => Response | Promise<Response>, refuse?: string) {
  const calls: Array<{ url: string; init: RequestInit }> = [];
  const dir = createModelDirectory({
    log: createLogger("error"),
    fetchInit: {},
    checkUrl: async () => refuse,
    catalog: () => CATALOG,
    fetch: (async (url: string, init: RequestInit) => {
      calls.push({ url, init });
      return answer(url, init);
    }) as unknown as typeof fetch,
  });
  return { dir, calls };
}

describe("the model directory", () => {
  test("hosts are known by name; the catalog names models per provider, without patterns", () => {
    expect(knownProvider(key(1, "https://api.openai.com/v1"))).toBe("openai");
    expect(knownProvider(key(1, "https://api.anthropic.com"))).toBe("anthropic");
    expect(knownProvider(key(1, "https://generativelanguage.googleapis.com"))).toBe("gemini");
    expect(knownProvider(key(1, "https://llm.internal.example"))).toBeUndefined();
    const catalog = catalogModels(CATALOG);
    expect(catalog.get("openai")).toContain("gpt-4o");
    expect(catalog.get("anthropic")).toContain("claude-opus-4-5");
    expect(catalog.get("gemini")).toContain("gemini-2.5-pro");
    for (const names of catalog.values()) for (const name of names) expect(name).not.toContain("*");
  });

  test("an Anthropic host is asked with its headers and paged by after_id; a redirect is never followed", async () => {
    const { dir, calls } = directory((url) =>
      url.includes("after_id=")
        ? Response.json({ data: [{ id: "claude-b" }], has_more: false, last_id: "claude-b" })
        : Response.json({ data: [{ id: "claude-a" }], has_more: true, last_id: "claude-a" }),
    );
    const k = key(1, "https://api.anthropic.com");
    dir.refresh([k]);
    await dir.settled();
    expect(dir.served(k)).toEqual(["claude-a", "claude-b"]);
    expect(calls[0]!.url).toBe("https://api.anthropic.com/v1/models?limit=1000");
    expect(calls[1]!.url).toBe("https://api.anthropic.com/v1/models?limit=1000&after_id=claude-a");
    const headers = calls[0]!.init.headers as Record<string, string>;
    expect(headers["x-api-key"]).toBe(k.secret);
    expect(headers["anthropic-version"]).toBe("2023-06-01");
    expect(calls[0]!.init.redirect).toBe("manual");
  });

  test("a Gemini host: models/ prefixes dropped, pageToken followed", async () => {
    const { dir, calls } = directory((url) =>
      url.includes("pageToken=")
        ? Response.json({ models: [{ name: "models/gemini-b" }] })
        : Response.json({ models: [{ name: "models/gemini-a" }], nextPageToken: "p2" }),
    );
    const k = key(2, "https://generativelanguage.googleapis.com");
    dir.refresh([k]);
    await dir.settled();
    expect(dir.served(k)).toEqual(["gemini-a", "gemini-b"]);
    expect((calls[0]!.init.headers as Record<string, string>)["x-goog-api-key"]).toBe(k.secret);
  });

  test("until a list arrives, and when fetching fails or the address is refused, a known host serves the catalog's models", async () => {
    const failing = directory(() => new Response("no", { status: 500 }));
    const openai = key(3, "https://api.openai.com/v1");
    expect(failing.dir.served(openai)).toContain("gpt-4o");
    failing.dir.refresh([openai]);
    await failing.dir.settled();
    expect(failing.dir.served(openai)).toContain("gpt-4o");

    const refused = directory(() => Response.json({ data: [{ id: "never" }] }), "it points at 169.254.169.254");
    refused.dir.refresh([openai]);
    await refused.dir.settled();
    expect(refused.calls).toHaveLength(0);
    expect(refused.dir.served(openai)).not.toContain("never");
  });

  test("a changed key is asked again; an unchanged one is not", async () => {
    const { dir, calls } = directory(() => Response.json({ data: [{ id: "m1" }] }));
    const k = key(4, "https://llm.example.com/v1");
    dir.refresh([k]);
    await dir.settled();
    dir.refresh([k]);
    await dir.settled();
    expect(calls).toHaveLength(1);
    const changed = { ...k, secret: "another-secret-0123456789" };
    expect(dir.served(changed)).toEqual([]);
    dir.refresh([changed]);
    await dir.settled();
    expect(calls).toHaveLength(2);
    expect(dir.served(changed)).toEqual(["m1"]);
    dir.stop();
  });
});
