import { DEFAULT_AZURE_API_VERSION, type AzureConfig } from "../routing/provider-config.ts";
import type { PoolKey } from "../routing/pool-key.ts";
import { stringifyBody, withMembers } from "../formats/held-json.ts";
import { bodyOf, type UpstreamAdapter, type UpstreamCall } from "./types.ts";

/** OpenAI operations Azure serves under `/openai/deployments/{deployment}/…`. */
const DEPLOYMENT_OPERATIONS = new Set([
  "chat/completions",
  "completions",
  "embeddings",
  "images/generations",
  "images/edits",
  "audio/transcriptions",
  "audio/translations",
  "audio/speech",
]);

function operationOf(path: string): string {
  return path.replace(/^\/v1\//, "");
}

function apiVersion(config: AzureConfig, model: string | undefined, env: NodeJS.ProcessEnv): string {
  return (model && config.api_versions?.[model]) || env.AZURE_OPENAI_API_VERSION || DEFAULT_AZURE_API_VERSION;
}

/**
 * Azure accepts `stream_options` from api-version 2024-08-01(-preview) on; earlier ones
 * (2024-06-01 GA, 2024-05-01-preview…) answer 400 "Unrecognized request argument
 * supplied: stream_options". A dated version before that never gets the option the
 * router added to meter a stream: the stream then carries no usage and is estimated.
 */
function refusesStreamOptions(version: string): boolean {
  return /^\d{4}-\d{2}-\d{2}/.test(version) && version.slice(0, 10) < "2024-08-01";
}

/**
 * Azure knows `max_completion_tokens` from api-version 2024-09-01(-preview) on; earlier
 * ones answer 400 "Unrecognized request argument supplied: max_completion_tokens". A body
 * the router translated names its limit so; for those versions it becomes `max_tokens`.
 */
function refusesMaxCompletionTokens(version: string): boolean {
  return /^\d{4}-\d{2}-\d{2}/.test(version) && version.slice(0, 10) < "2024-09-01";
}

/** The body, without what the router itself put in that the call's dated api-version refuses. */
function bodyForVersion(call: UpstreamCall, version: string) {
  if (!call.json) return bodyOf(call);
  const edits: Record<string, unknown> = {};
  if (call.addedStreamOptions && refusesStreamOptions(version)) edits.stream_options = undefined;
  if (call.translated && call.json.max_completion_tokens !== undefined && refusesMaxCompletionTokens(version)) {
    edits.max_tokens = call.json.max_completion_tokens;
    edits.max_completion_tokens = undefined;
  }
  return Object.keys(edits).length === 0 ? bodyOf(call) : stringifyBody(withMembers(call.json, edits));
}

/** A Provider that is a resource's v1 API (`https://{resource}.openai.azure.com/openai/v1`), as Azure's portal now shows it. */
const V1_SURFACE = /\/openai\/v1\/*$/;

export const isAzureV1 = (provider: string) => V1_SURFACE.test(provider);

/**
 * The body of a call whose URL does not name the deployment (Responses, the v1 API):
 * Azure reads the deployment from its `model`, so the key's `deployments` map applies
 * there. A multipart body (audio) is sent as it came: its model field is the client's.
 */
function deploymentBody(call: UpstreamCall, deployment: string | undefined) {
  const renamed = deployment !== undefined && call.json && !call.file && call.json.model !== deployment;
  return renamed ? stringifyBody(withMembers(call.json!, { model: deployment })) : bodyOf(call);
}

/**
 * Azure's v1 API: OpenAI's own paths under `/openai/v1`, the deployment named by the
 * body's `model`, and no dated `api-version` (the surface exists to do without one).
 */
function v1Request(key: PoolKey, call: UpstreamCall, deployment: string | undefined) {
  const url = `${key.provider.replace(/\/+$/, "")}${call.path.replace(/^\/v1\//, "/")}${call.search}`;
  const headers = new Headers(call.headers);
  headers.set("api-key", key.secret);
  return { url, headers, body: deploymentBody(call, deployment) };
}

/**
 * Azure OpenAI: model operations on deployment URLs, everything else (responses,
 * files, threads, video jobs) under `/openai/…`, always with `api-version` and the
 * `api-key` header.
 */
export function createAzureAdapter(env: NodeJS.ProcessEnv = process.env): UpstreamAdapter {
  return {
    supports(call) {
      return call.family === "openai";
    },
    async prepare(key: PoolKey, call: UpstreamCall) {
      const config = key.config as AzureConfig;
      const mapped = (call.model && config.deployments?.[call.model]) || undefined;
      if (isAzureV1(key.provider)) return v1Request(key, call, mapped);
      const operation = operationOf(call.path);
      const params = new URLSearchParams(call.search);
      const version = apiVersion(config, call.model, env);
      params.set("api-version", version);
      const headers = new Headers(call.headers);
      headers.set("api-key", key.secret);
      if (!DEPLOYMENT_OPERATIONS.has(operation)) {
        // Responses, files, threads, videos: Azure serves them beside the deployments.
        return { url: `${key.provider}/openai/${operation}?${params}`, headers, body: deploymentBody(call, mapped) };
      }
      const deployment = mapped ?? call.model ?? "";
      return { url: `${key.provider}/openai/deployments/${encodeURIComponent(deployment)}/${operation}?${params}`, headers, body: bodyForVersion(call, version) };
    },
  };
}
