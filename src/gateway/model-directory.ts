import type { Logger } from "../core/log.ts";
import type { PricingTable } from "../metering/pricing/schema.ts";
import { compilePattern } from "../routing/patterns.ts";
import type { PoolKey } from "../routing/pool-key.ts";
import type { AzureConfig } from "../routing/provider-config.ts";
import { joinProviderPath } from "../upstreams/standard.ts";
import type { Family } from "../formats/family.ts";
import { familyOfHost, FORMATS, formatOf } from "../formats/registry.ts";

/**
 * Which models each provider key serves, for the model lists (docs/api.md, "Model
 * lists"): its `config.models` when set; otherwise its upstream's own model list,
 * fetched in the background (never on a request), cached, refreshed when the key
 * changes and every 10 minutes; an Azure key's deployment map; and, until a list
 * arrives or when the fetch fails, the catalog's models of the provider its host is
 * known as. A list call only reads what is here.
 */

/** The upstream APIs whose model-list endpoint the router knows: each family's own. */
type ListApi = Family;

/** Providers a host is known as, for the catalog fallback. */
type KnownProvider = ListApi | "vertex";

const REFRESH_MS = 10 * 60_000;
const FETCH_TIMEOUT_MS = 10_000;
const MAX_PAGES = 10;
const CONCURRENCY = 4;

const hostOf = (url: string) => {
  try {
    return new URL(url).hostname;
  } catch {
    return "";
  }
};

/** The provider a key's host is known as; undefined for hosts the router does not know. */
export function knownProvider(key: Pick<PoolKey, "provider" | "config">): KnownProvider | undefined {
  if (key.config.provider_type === "vertex") return "vertex";
  if (key.config.provider_type === "azure") return "openai";
  const family = familyOfHost(key.provider);
  if (family) return family;
  return /aiplatform\.googleapis\.com$/i.test(hostOf(key.provider)) ? "vertex" : undefined;
}

/** Which provider a catalog model belongs to, by its name. */
function providerOfModel(name: string): KnownProvider | undefined {
  for (const format of Object.values(FORMATS)) if (format.publishes.test(name)) return format.family;
  return undefined;
}

/**
 * The catalog's model names per provider: exact entries, and patterns whose only
 * wildcard is a trailing one (`gemini-2.5-pro*` names `gemini-2.5-pro`).
 */
export function catalogModels(table: PricingTable): Map<KnownProvider, string[]> {
  const out = new Map<KnownProvider, string[]>();
  for (const section of Object.values(table) as Array<Record<string, unknown>>) {
    for (const pattern of Object.keys(section)) {
      const name = pattern.replace(/-?\*$/, "");
      if (name.includes("*") || name === "") continue;
      const provider = providerOfModel(name);
      if (!provider) continue;
      const list = out.get(provider) ?? [];
      if (!list.includes(name)) list.push(name);
      out.set(provider, list);
    }
  }
  // Vertex serves Google's and Anthropic's models.
  out.set("vertex", [...(out.get("gemini") ?? []), ...(out.get("anthropic") ?? [])]);
  return out;
}

export interface ModelDirectoryDeps {
  log: Logger;
  /** Extra fetch options (the upstream CA). */
  fetchInit: BunFetchRequestInit;
  /** The upstream address policy: why a URL's host may not be reached, or undefined. */
  checkUrl(url: string): Promise<string | undefined>;
  /** The pricing table in effect, for the catalog fallback. */
  catalog(): PricingTable;
  fetch?: typeof fetch;
}

interface Entry {
  /** What the key was fetched as: a change of URL, secret or config fetches again. */
  fingerprint: string;
  /** The upstream's own list; undefined until fetched or when fetching failed. */
  upstream: string[] | undefined;
  fetchedAt: number;
}

export interface ModelDirectory {
  /** Exact model names the key serves (no patterns), from what is known now. */
  served(key: PoolKey): string[];
  /** Starts fetching lists of keys whose list is missing, stale or for an older version of the key. */
  refresh(keys: readonly PoolKey[]): void;
  /** Waits for fetches under way (tests). */
  settled(): Promise<void>;
  stop(): void;
}

const fingerprintOf = (key: PoolKey) => `${key.provider}\u0000${JSON.stringify(key.config)}\u0000${key.secret}`;

/** Which list API a key speaks, or undefined when no fetch is needed (Azure deployments, Vertex catalog). */
function listApiOf(key: PoolKey): ListApi | undefined {
  if (key.config.provider_type !== "standard") return undefined;
  const known = knownProvider(key);
  // A host the router does not know is tried as OpenAI-compatible, what most speak.
  return known === "vertex" ? undefined : (known ?? "openai");
}

/** The URL of a page of a key's model list and the headers carrying its secret, in the family's own list API. */
function listRequest(key: PoolKey, api: ListApi, cursor: string | undefined): { url: string; headers: Record<string, string> } {
  const { path, headers } = formatOf(api).upstreamModelList(key.secret, cursor);
  return { url: joinProviderPath(key.provider, path), headers };
}

export function createModelDirectory(deps: ModelDirectoryDeps): ModelDirectory {
  const entries = new Map<number, Entry>();
  const running = new Map<number, Promise<void>>();
  const queue: PoolKey[] = [];
  let active = 0;
  let timer: ReturnType<typeof setInterval> | undefined;
  let known: PoolKey[] = [];
  const fetchImpl = deps.fetch ?? fetch;

  const fetchList = async (key: PoolKey, api: ListApi): Promise<string[]> => {
    const ids: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const request = listRequest(key, api, cursor);
      const refusal = await deps.checkUrl(request.url);
      if (refusal) throw new Error(`upstream address refused: ${refusal}`);
      const response = await fetchImpl(request.url, {
        ...deps.fetchInit,
        headers: request.headers,
        // A redirect would carry the secret to another host.
        redirect: "manual",
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      });
      if (!response.ok) {
        await response.body?.cancel().catch(() => {});
        throw new Error(`HTTP ${response.status}`);
      }
      const { ids: found, next } = formatOf(api).readModelPage(await response.json());
      ids.push(...found);
      if (!next) break;
      cursor = next;
    }
    return ids;
  };

  const load = async (key: PoolKey) => {
    const fingerprint = fingerprintOf(key);
    const api = listApiOf(key);
    if (!api) {
      entries.set(key.id, { fingerprint, upstream: undefined, fetchedAt: Date.now() });
      return;
    }
    try {
      const upstream = await fetchList(key, api);
      entries.set(key.id, { fingerprint, upstream, fetchedAt: Date.now() });
      deps.log.debug("model list fetched", { key: key.id, models: upstream.length });
    } catch (error) {
      entries.set(key.id, { fingerprint, upstream: undefined, fetchedAt: Date.now() });
      // The key's id and what went wrong, never its URL's query or its secret.
      deps.log.info("model list not available; using the catalog", { key: key.id, error: (error as Error).message.slice(0, 200) });
    }
  };

  const pump = () => {
    while (active < CONCURRENCY && queue.length > 0) {
      const key = queue.shift()!;
      if (running.has(key.id)) continue;
      active++;
      const job = load(key).finally(() => {
        active--;
        running.delete(key.id);
        pump();
      });
      running.set(key.id, job);
    }
  };

  const stale = (key: PoolKey) => {
    const entry = entries.get(key.id);
    return !entry || entry.fingerprint !== fingerprintOf(key) || Date.now() - entry.fetchedAt >= REFRESH_MS;
  };

  /** What the catalog says a key serves, when nothing better is known. */
  const fallback = (key: PoolKey): string[] => {
    if (key.config.provider_type === "azure") {
      const deployments = (key.config as AzureConfig).deployments;
      if (deployments && Object.keys(deployments).length > 0) return Object.keys(deployments);
    }
    const provider = knownProvider(key);
    return provider ? (catalogModels(deps.catalog()).get(provider) ?? []) : [];
  };

  return {
    served(key) {
      const entry = entries.get(key.id);
      const current = entry && entry.fingerprint === fingerprintOf(key) ? entry.upstream : undefined;
      const listed = current ?? fallback(key);
      const patterns = key.config.models;
      if (!patterns) return listed;
      const compiled = patterns.map(compilePattern);
      const exact = patterns.filter((p) => !p.includes("*"));
      return [...new Set([...exact, ...listed.filter((name) => compiled.some((p) => p.test(name)))])];
    },
    refresh(keys) {
      known = [...keys];
      for (const key of keys) if (stale(key) && !running.has(key.id) && !queue.includes(key)) queue.push(key);
      pump();
      if (!timer) {
        timer = setInterval(() => this.refresh(known), REFRESH_MS);
        timer.unref?.();
      }
    },
    async settled() {
      while (running.size > 0 || queue.length > 0) await Promise.all([...running.values()]);
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
}
