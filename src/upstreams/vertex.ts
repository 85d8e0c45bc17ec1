import type { PoolKey } from "../routing/pool-key.ts";
import type { VertexConfig } from "../routing/provider-config.ts";
import { createAccessTokenProvider, parseServiceAccount, vertexBaseUrl, type AccessTokenProvider } from "./google-auth.ts";
import type { Family } from "../formats/family.ts";
import { CredentialRefusedError, untilAborted, type UpstreamAdapter, type UpstreamCall } from "./types.ts";

/** The body Anthropic-on-Vertex expects in place of a `model` field. */
const VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16";

const GEMINI_METHOD = /^\/v1(?:beta)?\/models\/[^/:]+:([A-Za-z]+)$/;
/**
 * Vertex has no batchEmbedContents, and serves its embedding models through :predict
 * with another body and answer: not translated (docs/api.md "Provider types").
 */
const GEMINI_EMBEDDING = /:(?:embedContent|batchEmbedContents)$/;
const EMBEDDING_REFUSAL =
  "Vertex AI keys do not serve Gemini embeddings (embedContent, batchEmbedContents): Vertex serves embedding models through :predict with another request body. Route embedding models to a Gemini API key.";

/** Where each family's calls go on Vertex, and with which body. */
interface VertexRoute {
  supports(call: UpstreamCall): boolean;
  /** Why a call of this family that is not supported never will be, for the client to hear (else it is "no key now"). */
  refusal?(call: UpstreamCall): string | undefined;
  target(base: string, model: string, call: UpstreamCall): { url: string; body: string };
}

const VERTEX_ROUTES: Record<Family, VertexRoute> = {
  gemini: {
    supports: (call) => GEMINI_METHOD.test(call.path) && !GEMINI_EMBEDDING.test(call.path),
    refusal: (call) => (GEMINI_EMBEDDING.test(call.path) ? EMBEDDING_REFUSAL : undefined),
    target(base, model, call) {
      const method = GEMINI_METHOD.exec(call.path)?.[1] ?? "generateContent";
      return { url: `${base}/publishers/google/models/${model}:${method}${call.stream ? "?alt=sse" : ""}`, body: JSON.stringify(call.json ?? {}) };
    },
  },
  anthropic: {
    supports: (call) => call.path === "/v1/messages" || call.path === "/v1/messages/count_tokens",
    target(base, model, call) {
      if (call.path === "/v1/messages/count_tokens") {
        // count-tokens keeps the model in the body and has its own pseudo-model path.
        const body = { ...call.json, anthropic_version: VERTEX_ANTHROPIC_VERSION };
        return { url: `${base}/publishers/anthropic/models/count-tokens:rawPredict`, body: JSON.stringify(body) };
      }
      const { model: _model, ...rest } = call.json ?? {};
      const verb = call.stream ? "streamRawPredict" : "rawPredict";
      return { url: `${base}/publishers/anthropic/models/${model}:${verb}`, body: JSON.stringify({ ...rest, anthropic_version: VERTEX_ANTHROPIC_VERSION }) };
    },
  },
  openai: {
    supports: (call) => call.path === "/v1/chat/completions",
    // Vertex's OpenAI-compatible endpoint has chat completions and nothing else.
    refusal: (call) =>
      call.path === "/v1/chat/completions"
        ? undefined
        : `Vertex AI keys serve the OpenAI format only for chat completions (Vertex's OpenAI-compatible endpoint has no ${call.path}). Route this model to another key.`,
    target(base, _model, call) {
      // Vertex's OpenAI-compatible endpoint names models `publisher/model`.
      const json = { ...call.json };
      if (typeof json.model === "string" && !json.model.includes("/")) json.model = `google/${json.model}`;
      return { url: `${base}/endpoints/openapi/chat/completions`, body: JSON.stringify(json) };
    },
  },
};

interface Credentials {
  secret: string;
  /** The key's `config.token_uri` when the tokens were made: an owner's edit of it makes new ones. */
  configTokenUri: string | undefined;
  tokens: AccessTokenProvider;
  projectId: string | undefined;
}

/**
 * Google Vertex AI with a service-account key file as the secret: Gemini and
 * Anthropic publisher models, and the OpenAI-compatible chat endpoint, all with an
 * OAuth access token exchanged from a signed JWT.
 */
export function createVertexAdapter(fetchInit: BunFetchRequestInit = {}, checkUrl?: (url: string) => Promise<string | undefined>): UpstreamAdapter {
  /**
   * Keyed by the pool's key object, not its id: a reload updates that object in place
   * and drops it when the key is deleted, so a deleted key's service account (its private
   * key) goes with it once its last call ends, and a changed secret replaces the entry
   * (below). A map by id kept every key file ever used for the process's life.
   */
  const credentials = new WeakMap<PoolKey, Credentials>();

  const credentialsOf = (key: PoolKey): Credentials => {
    const config = key.config as VertexConfig;
    const cached = credentials.get(key);
    // A changed key file or token endpoint is a new credential: the old endpoint must not
    // receive another assertion, nor its token serve on.
    if (cached && cached.secret === key.secret && cached.configTokenUri === config.token_uri) return cached;
    let fresh: Credentials;
    try {
      const account = parseServiceAccount(key.secret);
      fresh = {
        secret: key.secret,
        configTokenUri: config.token_uri,
        tokens: createAccessTokenProvider({ account, tokenUri: config.token_uri ?? account.token_uri, fetchInit, checkUrl }),
        projectId: account.project_id,
      };
    } catch (error) {
      // A key file saving refuses today, stored under older rules (a token_uri over plain
      // http): unusable until its owner replaces it, as a refused exchange is, so the key
      // sleeps (reason auth) instead of being retried as if the network had failed. The
      // message names the field, never the key (parseServiceAccount).
      throw new CredentialRefusedError(`the key's service-account key file cannot be used: ${(error as Error).message}`, 401);
    }
    credentials.set(key, fresh);
    return fresh;
  };

  const projectOf = (key: PoolKey, creds: Credentials): string => {
    const project = (key.config as VertexConfig).project_id ?? creds.projectId;
    if (!project) throw new Error("the Vertex key has no project_id (set config.project_id)");
    return project;
  };

  return {
    supports: (call) => VERTEX_ROUTES[call.family].supports(call),
    refusal: (call) => VERTEX_ROUTES[call.family].refusal?.(call),
    async verify(key) {
      const creds = credentialsOf(key);
      projectOf(key, creds);
      await creds.tokens.fresh();
    },
    async prepare(key, call, signal) {
      const config = key.config as VertexConfig;
      const creds = credentialsOf(key);
      const location = config.location ?? "global";
      const project = projectOf(key, creds);
      const base = `${(config.base_url ?? vertexBaseUrl(location)).replace(/\/+$/, "")}/v1/projects/${project}/locations/${location}`;
      const headers = new Headers(call.headers);
      // The exchange is shared by the key's calls and bounded at 30 s; this attempt waits
      // for it only as long as its own limits allow.
      const token = await untilAborted(creds.tokens.token(), signal);
      headers.set("authorization", `Bearer ${token}`);
      headers.delete("anthropic-version");
      return { ...VERTEX_ROUTES[call.family].target(base, encodeURIComponent(call.model ?? ""), call), headers, credentials: [token] };
    },
    refreshCredentials(key, sent) {
      const creds = credentials.get(key);
      if (!creds) return false;
      // Only the token that was refused: a fresher one (or its exchange) serves the retry.
      creds.tokens.invalidate(sent?.[0]);
      return true;
    },
  };
}
