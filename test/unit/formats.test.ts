import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { HttpError } from "../../src/core/errors.ts";
import type { Family } from "../../src/formats/family.ts";
import { FORMATS, familyOfRequest, formatOf } from "../../src/formats/registry.ts";
import { upstreamCall, withUsageOption } from "../../src/gateway/call.ts";
import { standardAdapter } from "../../src/upstreams/standard.ts";
import type { PoolKey } from "../../src/routing/pool-key.ts";

const ROOT = join(import.meta.dir, "../../src");
const FAMILIES: Family[] = ["openai", "anthropic", "gemini"];

/** Relative import specifiers of every .ts file under a folder of src/. */
function importsUnder(folder: string): Array<{ file: string; target: string }> {
  const out: Array<{ file: string; target: string }> = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith(".ts")) {
        for (const match of readFileSync(path, "utf8").matchAll(/from\s+"(\.{1,2}\/[^"]+)"/g)) {
          out.push({ file: path.slice(ROOT.length + 1), target: join(dir, match[1]!).slice(ROOT.length + 1) });
        }
      }
    }
  };
  walk(join(ROOT, folder));
  return out;
}

describe("one module per family, found through the registry", () => {
  test("every family has its folder and its registry entry, under its own name", () => {
    for (const family of FAMILIES) {
      expect(statSync(join(ROOT, "formats", family)).isDirectory()).toBe(true);
      expect(formatOf(family).family).toBe(family);
    }
    expect(Object.keys(FORMATS).sort()).toEqual([...FAMILIES].sort());
  });

  test("the formats depend on nothing above them: no gateway, upstream, metering, account or composition module", () => {
    const upward = importsUnder("formats").filter(({ target }) => /^(gateway|upstreams|metering|accounts|admin|tenancy|routing|deps\.ts|app\.ts)/.test(target));
    expect(upward).toEqual([]);
  });

  test("upstream adapters know no HTTP-layer type (they take plain values)", () => {
    expect(importsUnder("upstreams").filter(({ target }) => target.startsWith("http/"))).toEqual([]);
  });

  test("no family is decided by a branch outside its folder", () => {
    const branches: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) {
          if (path !== join(ROOT, "formats")) walk(path);
        } else if (name.endsWith(".ts") && /family\s*[!=]==\s*"(anthropic|gemini)"/.test(readFileSync(path, "utf8"))) branches.push(path.slice(ROOT.length + 1));
      }
    };
    walk(ROOT);
    expect(branches).toEqual([]);
  });
});

describe("what each family owns", () => {
  const error = new HttpError("rate_limit", "slow down", { code: "rpm" });

  test("error envelopes: OpenAI's error object, Anthropic's typed error, Google's rpc status", () => {
    expect(formatOf("openai").errorBody(error)).toEqual({ error: { message: "slow down", type: "rate_limit_error", param: null, code: "rpm" } });
    expect(formatOf("anthropic").errorBody(error)).toEqual({ type: "error", error: { type: "rate_limit_error", message: "slow down" } });
    expect(formatOf("gemini").errorBody(error)).toEqual({ error: { code: 429, message: "slow down", status: "RESOURCE_EXHAUSTED" } });
  });

  test("mid-stream errors: Anthropic names the event `error`, the others send a data-only event", () => {
    const text = (family: Family) => new TextDecoder().decode(formatOf(family).streamErrorEvent(error));
    expect(text("anthropic")).toStartWith("event: error\ndata: {");
    expect(text("openai")).toStartWith("data: {");
    expect(text("gemini")).toStartWith("data: {");
    for (const family of FAMILIES) {
      expect(text(family)).toEndWith("\n\n");
      expect(JSON.parse(text(family).split("data: ")[1]!)).toEqual(formatOf(family).errorBody(error) as object);
    }
  });

  test("the shared model-list path goes to the family whose SDK's headers the request carries", () => {
    const get = (headers: Record<string, string>) => ({ method: "GET", headers: new Headers(headers) });
    expect(familyOfRequest(get({ "anthropic-version": "2023-06-01", "x-api-key": "k" }), "/v1/models")).toBe("anthropic");
    expect(familyOfRequest(get({ "x-goog-api-key": "k" }), "/v1/models/gemini-2.5-pro")).toBe("gemini");
    expect(familyOfRequest(get({ "x-goog-api-key": "k", authorization: "Bearer k" }), "/v1/models")).toBe("openai");
    expect(familyOfRequest({ method: "POST", headers: new Headers({ "anthropic-version": "2023-06-01" }) }, "/v1/chat/completions")).toBe("openai");
    // A model id with a colon is a Gemini method only in a POST.
    expect(familyOfRequest(get({ authorization: "Bearer k" }), "/v1/models/llama3:latest")).toBe("openai");
    expect(familyOfRequest({ method: "POST", headers: new Headers({ authorization: "Bearer k" }) }, "/v1/models/gemini-x:generateContent")).toBe("gemini");
  });

  const key = (family: Family): PoolKey =>
    ({ id: 1, name: "k", level: 1, provider: "https://upstream.example/v1", secret: `sk-${family}`, config: { provider_type: "standard" } }) as unknown as PoolKey;

  test("upstream auth: each family's secret goes in its own header only", async () => {
    const expected: Record<Family, Record<string, string>> = {
      openai: { authorization: "Bearer sk-openai" },
      anthropic: { "x-api-key": "sk-anthropic", "anthropic-version": "2023-06-01" },
      gemini: { "x-goog-api-key": "sk-gemini" },
    };
    for (const family of FAMILIES) {
      const prepared = await standardAdapter.prepare(key(family), {
        family, method: "POST", path: "/v1/x", search: "", model: "m", stream: false, json: {}, bytes: undefined, headers: new Headers(),
      });
      expect(Object.fromEntries(prepared.headers)).toEqual(expected[family]);
    }
  });

  test("the model goes upstream in the body (OpenAI, Anthropic) or in the path (Gemini)", () => {
    const endpoint = formatOf("anthropic").endpoints["/v1/messages"]!;
    const bytes = new TextEncoder().encode('{"model":"alias","max_tokens":5}');
    const anthropicCall = { endpoint, method: "POST", family: "anthropic" as const, requestedModel: "alias", stream: false, json: { model: "alias", max_tokens: 5 }, bytes, hideUsageChunk: false, headers: new Headers(), search: "" };
    const mapped = upstreamCall(anthropicCall, "claude-real");
    expect({ path: mapped.path, model: mapped.json?.model, bytes: mapped.bytes }).toEqual({ path: "/v1/messages", model: "claude-real", bytes: undefined });
    expect(upstreamCall(anthropicCall, "alias").bytes).toBe(bytes);

    const calls = formatOf("gemini").pathModels!;
    const gemini = calls.read(calls.endpoint("v1beta", "streamGenerateContent")!, new Uint8Array(0), "alias:streamGenerateContent", { url: "http://r/v1beta/models/alias:streamGenerateContent?key=x", headers: new Headers() });
    const routed = upstreamCall(gemini, "gemini-2.5-pro");
    expect({ path: routed.path, search: routed.search, json: routed.json }).toEqual({ path: "/v1beta/models/gemini-2.5-pro:streamGenerateContent", search: "?alt=sse", json: {} });
    expect(calls.endpoint("v1beta", "deleteEverything")).toBeUndefined();
  });

  test("an OpenAI chat stream without stream_options asks for usage by a splice into its own bytes; any other edit serialises the body", () => {
    const endpoint = formatOf("openai").endpoints["/v1/chat/completions"]!;
    const chat = (text: string) => {
      const json = JSON.parse(text) as Record<string, unknown>;
      return { endpoint, method: "POST", family: "openai" as const, requestedModel: String(json.model), stream: json.stream === true, json, bytes: new TextEncoder().encode(text), hideUsageChunk: false, headers: new Headers(), search: "" };
    };
    const sent = (text: string, model: string) => {
      const call = chat(text);
      const upstream = upstreamCall(call, model);
      const body = upstream.bytes ? new TextDecoder().decode(upstream.bytes) : JSON.stringify(upstream.json);
      return { body: JSON.parse(body) as Record<string, unknown>, spliced: upstream.bytes !== undefined, hidden: call.hideUsageChunk, json: upstream.json };
    };
    const text = ' \n {"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi \\u00e9"}]}';
    const plain = sent(text, "gpt-4o");
    expect(plain).toEqual({ body: { ...JSON.parse(text), stream_options: { include_usage: true } }, spliced: true, hidden: true, json: { ...JSON.parse(text), stream_options: { include_usage: true } } });
    // Options without include_usage keep theirs; a mapped model: serialised once with every edit.
    expect(sent('{"model":"gpt-4o","stream":true,"stream_options":{"x":1}}', "gpt-4o")).toMatchObject({ body: { stream_options: { x: 1, include_usage: true } }, spliced: false, hidden: true });
    expect(sent('{"model":"alias","stream":true}', "gpt-4o")).toMatchObject({ body: { model: "gpt-4o", stream: true, stream_options: { include_usage: true } }, spliced: false });
    // A client that asked for usage: its bytes as sent, nothing hidden.
    const asked = chat('{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true}}');
    expect(upstreamCall(asked, "gpt-4o").bytes).toBe(asked.bytes);
    expect(asked.hideUsageChunk).toBe(false);
    // Only a non-empty object is spliced.
    const bytes = (s: string) => new TextEncoder().encode(s);
    expect(withUsageOption(bytes("{}"))).toBeUndefined();
    expect(withUsageOption(bytes("{ \n}"))).toBeUndefined();
    expect(withUsageOption(bytes("\ufeff{\"a\":1}"))).toBeUndefined();
    expect(withUsageOption(bytes("[1]"))).toBeUndefined();
    expect(withUsageOption(undefined)).toBeUndefined();
    expect(new TextDecoder().decode(withUsageOption(bytes('\t{"a":1}'))!)).toBe('\t{"stream_options":{"include_usage":true},"a":1}');
  });

  test("model lists page in each family's own parameters", () => {
    const ids = ["a", "b", "c"];
    const facts = () => ({ contextWindow: 1000, formats: ["openai"] });
    expect(formatOf("openai").modelList(ids, new URLSearchParams(), facts)).toMatchObject({ object: "list", data: [{ id: "a" }, { id: "b" }, { id: "c" }] });
    expect(formatOf("anthropic").modelList(ids, new URLSearchParams("limit=2"), facts)).toMatchObject({ has_more: true, first_id: "a", last_id: "b" });
    const first = formatOf("gemini").modelList(ids, new URLSearchParams("pageSize=2"), facts) as { models: Array<{ name: string; inputTokenLimit: number }>; nextPageToken: string };
    expect(first.models.map((m) => [m.name, m.inputTokenLimit])).toEqual([["models/a", 1000], ["models/b", 1000]]);
    const rest = formatOf("gemini").modelList(ids, new URLSearchParams({ pageSize: "2", pageToken: first.nextPageToken }), facts) as { models: Array<{ name: string }>; nextPageToken?: string };
    expect({ names: rest.models.map((m) => m.name), next: rest.nextPageToken }).toEqual({ names: ["models/c"], next: undefined });
    expect(() => formatOf("anthropic").modelList(ids, new URLSearchParams("limit=0"), facts)).toThrow("limit must be an integer from 1 to 1000");
  });

  test("upstream model lists: each family's list request carries the secret in its header and reads its own paging", () => {
    expect(formatOf("anthropic").upstreamModelList("s", "m1")).toEqual({ path: "/v1/models?limit=1000&after_id=m1", headers: { "x-api-key": "s", "anthropic-version": "2023-06-01" } });
    expect(formatOf("anthropic").readModelPage({ data: [{ id: "x" }], has_more: true, last_id: "x" })).toEqual({ ids: ["x"], next: "x" });
    expect(formatOf("gemini").readModelPage({ models: [{ name: "models/g" }], nextPageToken: "t" })).toEqual({ ids: ["g"], next: "t" });
    expect(formatOf("openai").readModelPage({ data: [{ id: "o" }, {}] })).toEqual({ ids: ["o"], next: undefined });
  });
});
