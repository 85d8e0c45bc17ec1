import { formatOf } from "../formats/registry.ts";
import type { PoolKey } from "../routing/pool-key.ts";
import { bodyOf, type UpstreamAdapter, type UpstreamCall } from "./types.ts";

/**
 * Appends the client's path to the Provider URL. Users paste SDK-style base URLs
 * (`https://host/v1`), so a Provider that already ends in the path's leading version
 * segment does not get it twice.
 */
export function joinProviderPath(provider: string, path: string): string {
  const base = provider.replace(/\/+$/, "");
  const segment = /^\/[^/]+/.exec(path)?.[0];
  if (segment && /^\/v\d+(?:beta\d*|alpha\d*)?$/.test(segment) && base.endsWith(segment)) {
    return base + path.slice(segment.length);
  }
  return base + path;
}

/** Ordinary bearer/API-key upstreams: the secret goes in the family's native header. */
export const standardAdapter: UpstreamAdapter = {
  supports: () => true,
  async prepare(key: PoolKey, call: UpstreamCall) {
    const headers = new Headers(call.headers);
    formatOf(call.family).authorize(headers, key.secret);
    return { url: joinProviderPath(key.provider, call.path) + call.search, headers, body: bodyOf(call) };
  },
};
