/**
 * `POST /x-keys/{id}/test`: the cheapest call a key allows, and what came of it in
 * words an owner can act on. A standard key lists its upstream's models (in the list
 * API of the family its host is known for; OpenAI's elsewhere), an Azure key its
 * deployment's models, a Vertex key exchanges its service account for a token. Nothing
 * is charged and no model runs; the secret goes only to the key's own host, never into
 * the answer.
 */
import { redact, redactSecret } from "../../core/redact.ts";
import { familyOfHost, formatOf } from "../../formats/registry.ts";
import type { PoolKey } from "../../routing/pool-key.ts";
import { DEFAULT_AZURE_API_VERSION } from "../../routing/provider-config.ts";
import type { AddressGuard } from "../../upstreams/address-policy.ts";
import { adapterFor, type Adapters } from "../../upstreams/index.ts";
import { joinProviderPath } from "../../upstreams/standard.ts";
import { isAzureV1 } from "../../upstreams/azure.ts";

import type { KeyTestResult } from "../../wire/provider-keys.ts";
export type { KeyTestResult };

export interface KeyTestDeps {
  adapters: Adapters;
  addressGuard: Pick<AddressGuard, "check">;
  /** TLS options for upstream fetches, when the runtime does not trust the CA itself. */
  upstreamTls: { ca: string[] } | undefined;
  /** How long the test waits for the upstream (ms). */
  timeoutMs?: number;
}

const CERTIFICATE = /CERT|UNABLE_TO_VERIFY|SELF_SIGNED|ALTNAME|TLS/i;

/** A failure before any answer, in words: what happened and what to do. */
function unreachable(error: unknown, host: string, timeoutMs: number): KeyTestResult {
  const code = String((error as { code?: unknown }).code ?? "");
  const name = (error as { name?: unknown }).name;
  if (name === "TimeoutError" || name === "AbortError") return { ok: false, status: null, message: `No answer from ${host} within ${timeoutMs / 1000} s.` };
  if (CERTIFICATE.test(code)) {
    return {
      ok: false,
      status: null,
      message: `The certificate of ${host} is not trusted (${code}). If the upstream uses a private CA or sits behind a TLS-inspecting proxy, start the router with --upstream-ca-file set to that CA.`,
    };
  }
  if (code === "ECONNREFUSED" || code === "ConnectionRefused") return { ok: false, status: null, message: `${host} refused the connection: nothing listens there, or a firewall rejects it.` };
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return { ok: false, status: null, message: `The host name of ${host} does not resolve: check the Provider URL.` };
  return { ok: false, status: null, message: `${host} could not be reached (${code || "network error"}).` };
}

/** An upstream's answer, in words. */
function answered(status: number, host: string, what: string, location: string | null): KeyTestResult {
  if (status >= 200 && status < 300) return { ok: true, status, message: `${host} accepted the key (${what}).` };
  if (status === 401 || status === 403) return { ok: false, status, message: `${host} refused the key (${status}): check the secret, and that it may use this API.` };
  if (status >= 300 && status < 400) {
    return { ok: false, status, message: `${host} redirects (${status}${location ? ` to ${location}` : ""}); the router never follows redirects, which would carry the secret elsewhere: use the final URL as the Provider.` };
  }
  if (status === 404) return { ok: true, status, message: `${host} answers, but has no model list at this path (404): the key could not be checked; calls may still work.` };
  if (status === 429) return { ok: false, status, message: `${host} is rate-limiting the key (429) now.` };
  return { ok: false, status, message: `${host} answered ${status}: it is reachable but failing now.` };
}

/** The request that tests a standard or Azure key: its upstream's model list. */
function listRequest(key: PoolKey): { url: string; headers: Record<string, string>; what: string } {
  if (key.config.provider_type === "azure") {
    // The v1 API lists the resource's models without a dated api-version.
    if (isAzureV1(key.provider)) return { url: `${key.provider.replace(/\/+$/, "")}/models`, headers: { "api-key": key.secret }, what: "model list" };
    return { url: `${key.provider}/openai/models?api-version=${DEFAULT_AZURE_API_VERSION}`, headers: { "api-key": key.secret }, what: "model list" };
  }
  // The list API of the family whose provider the host is; OpenAI's, which most others speak, elsewhere.
  const { path, headers } = formatOf(familyOfHost(key.provider) ?? "openai").upstreamModelList(key.secret, undefined);
  return { url: joinProviderPath(key.provider, path), headers, what: "model list" };
}

export async function testKey(key: PoolKey, deps: KeyTestDeps): Promise<KeyTestResult> {
  const timeoutMs = deps.timeoutMs ?? 10_000;
  let host = "the upstream";
  try {
    host = new URL(key.provider).host;
  } catch {
    return { ok: false, status: null, message: "The Provider URL is not a URL." };
  }
  // Messages may quote an upstream's words: never the key's secret.
  const clean = (result: KeyTestResult): KeyTestResult => ({ ...result, message: redactSecret(redact(result.message), key.secret) });
  try {
    if (key.config.provider_type === "vertex") {
      // The service account's token exchange proves the credentials without running a model.
      try {
        // A fresh exchange: a cached token would test OK for an account deleted since.
        const adapter = adapterFor(deps.adapters, key);
        if (!adapter.verify) throw new Error("the Vertex adapter cannot check credentials");
        await adapter.verify(key);
      } catch (error) {
        if ((error as { code?: unknown }).code) throw error;
        return clean({ ok: false, status: null, message: `The service account could not be exchanged for an access token: ${(error as Error).message}` });
      }
      return clean({ ok: true, status: 200, message: "The service account was exchanged for an access token." });
    }
    const request = listRequest(key);
    const refusal = await deps.addressGuard.check(request.url);
    if (refusal) return clean({ ok: false, status: null, message: `The router may not send this key's secret to ${host}: ${refusal}.` });
    const response = await fetch(request.url, {
      headers: request.headers,
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
      ...(deps.upstreamTls ? { tls: deps.upstreamTls } : {}),
    } as BunFetchRequestInit);
    await response.body?.cancel().catch(() => {});
    return clean(answered(response.status, host, request.what, response.headers.get("location")));
  } catch (error) {
    return clean(unreachable(error, host, timeoutMs));
  }
}
