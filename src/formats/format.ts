import type { HttpError } from "../core/errors.ts";
import type { KeyFormat } from "../wire/constants.ts";
import type { Wire } from "./translate/translator.ts";
import type { SpooledForm } from "../http/multipart.ts";
import type { RateLimits } from "./rate-limits.ts";
import type { Family } from "./family.ts";
import type { SseEvent } from "./sse.ts";
import type { Usage } from "./usage.ts";

/** What the gateway needs to know about one model endpoint. */
export interface Endpoint {
  family: Family;
  /** Canonical path sent upstream (aliases map to it). */
  path: string;
  /** Where the model name is: the JSON body's `model`, or the path (Gemini). */
  model: "body" | "path" | "none";
  /** Safe to replay on another key after the upstream may have seen the body. */
  idempotent: boolean;
  /** OpenAI chat-style streams need `stream_options.include_usage` to report usage. */
  injectStreamUsage?: boolean;
  /**
   * How the call is priced: default tokens by ChatPricing; `free` not charged (token
   * counting); `image` per image by ImgPricing (or tokens when only ChatPricing has the
   * model); `audio` per minute by AudioPricing (or tokens); `speech` per minute of the
   * generated audio; `video` per second by VideoPricing.
   */
  billing?: "free" | "image" | "audio" | "speech" | "video";
  /**
   * A token count (`count_tokens`, `countTokens`): not usage. It obeys access rules and
   * request windows, never credit, spend or token limits, and leaves no usage row.
   */
  counting?: true;
  /**
   * The body fields that bound the output, as the endpoint's upstreams read them (Chat:
   * `max_tokens` and `max_completion_tokens`; Responses: `max_output_tokens`): when
   * several are given the largest counts, and another family's spelling bounds nothing
   * (its upstream, or a translator, ignores it). Absent: the common spellings, all of them.
   */
  outputLimit?: readonly string[];
  /** The input is held upstream (a realtime session's conversation): reserved as the model's whole context window. */
  statefulInput?: true;
  /** An embedding: its answer is vectors, never completion tokens (not even estimated ones). */
  embedding?: true;
  /** The body is multipart/form-data (spooled to disk, model read from its fields). */
  multipart?: boolean;
  /** The answer is binary and streamed back untouched (speech audio). */
  binary?: boolean;
  /** The model the upstream assumes when the client names none (used for routing and pricing only). */
  defaultModel?: string;
  /** The call creates an upstream object whose id binds it to the key that served it. */
  creates?: "response" | "video" | "file" | "thread" | "run" | "client_secret";
  /**
   * The call may continue a stored response (`previous_response_id`): it goes only to the
   * key that made it, and only for the account that did (Responses and its compaction).
   */
  continues?: true;
}

/** What a call asks of its output: its limit (undefined: none, the model's own) and the answers to generate. */
export interface OutputAsked {
  limit: number | undefined;
  answers: number;
}

/** A client's model call, read once by its family's module: what routing, admission and the relay need. */
export interface ClientCall {
  endpoint: Endpoint;
  /** HTTP method sent upstream (POST for model calls; object calls keep the client's). */
  method: string;
  family: Family;
  requestedModel: string | undefined;
  stream: boolean;
  /** The parsed JSON body (for JSON endpoints). */
  json: Record<string, unknown> | undefined;
  /** The body as received. */
  bytes: Uint8Array;
  /** A method named in the path after the model (Gemini's `generateContent`). */
  operation?: string;
  /** The API version segment of the client's path, where the family has several (Gemini). */
  version?: string;
  /** True when the router added `stream_options.include_usage` and must hide that chunk. */
  hideUsageChunk: boolean;
  headers: Headers;
  search: string;
  /** A multipart body spooled to disk. */
  form?: SpooledForm;
}

/** What a reader gets besides the body: the request's URL and the headers fit to forward. */
export interface CallSource {
  url: string;
  headers: Headers;
}

/** Accumulates usage from the SSE events of one stream. */
export interface StreamUsageTap {
  /** Feeds one decoded event; events of any type may be passed. */
  onEvent(event: SseEvent): void;
  /** undefined if no usage was seen */
  result(): Usage | undefined;
  /**
   * Where in raw stream bytes the first event this tap needs may be (the offset of its
   * key), or -1. The relay forwards what comes before it without decoding: most of a
   * stream is content deltas. A false positive only costs the decoding.
   */
  firstNeeded(bytes: Uint8Array): number;
  /**
   * Calls billed per call seen so far in the stream's items (OpenAI Responses' web and
   * file searches): charged beside the estimate of a stream cut before its counts.
   */
  calls?(): Pick<Usage, "webSearches" | "fileSearches"> | undefined;
}

/** What a family's model list may say about a model. */
export interface ModelFacts {
  /** From the tenant's price table. */
  contextWindow?: number;
  maxOutput?: number;
  /**
   * The wire formats its Level's keys speak natively (`openai`, `responses`, `anthropic`,
   * `gemini`): with translation every model is reachable from every family, natively or not.
   */
  formats: readonly string[];
}

/** One page of an upstream's model list. */
export interface UpstreamModelPage {
  ids: string[];
  /** Where the next page starts; undefined on the last. */
  next: string | undefined;
}

/**
 * Models served with the model and method in the path (`/v1beta/models/{model}:{method}`),
 * as Gemini does, rather than on fixed paths.
 */
export interface PathModelCalls {
  /** The version segments served (`/v1beta/models/…`, `/v1/models/…`). */
  versions: readonly string[];
  /** The method most calls use (Gemini's `generateContent`), for describing a route. */
  primary: string;
  /** The endpoint of a method, or undefined when the family has no such method (404). */
  endpoint(version: string, method: string): Endpoint | undefined;
  /** Reads the call; `spec` is the path's last segment (`{model}:{method}`). */
  read(endpoint: Endpoint, bytes: Uint8Array, spec: string, source: CallSource): ClientCall;
}

/**
 * One wire format of a family's model calls that translation reads and writes (OpenAI
 * has two: Chat Completions and Responses): which calls are in it, the key format that
 * speaks it, and its model call as routing sees it.
 */
export interface ModelWire {
  readonly wire: Wire;
  readonly keyFormat: KeyFormat;
  /** Whether a call of the family is a model call of this wire (not a token count, an embedding or an object call). */
  carries(call: Pick<ClientCall, "endpoint" | "operation">): boolean;
  /** Its model call as routing sees it, for explaining a route without a request to read. */
  readonly modelCall: Pick<ClientCall, "endpoint" | "operation" | "version">;
}

/**
 * Everything one API family means to the router, behind one interface: adding a
 * family is adding a folder under `src/formats/` and an entry in the registry.
 */
export interface WireFormat {
  readonly family: Family;
  /** POST model endpoints on fixed paths, aliases included (each maps to its endpoint). */
  readonly endpoints: Readonly<Record<string, Endpoint>>;
  /** Calls with the model in the path, when the family has them. */
  readonly pathModels?: PathModelCalls;
  /** Whether a path is this family's (its envelope and key header apply); asked in registry order. */
  ownsPath(path: string): boolean;
  /** On the model-list paths the SDKs share, whether the request's headers say this family's SDK sent it. */
  sentBy?(headers: Headers): boolean;
  /** The header this family's SDKs send the API key in when not as `Authorization: Bearer`. */
  readonly keyHeader?: string;
  /** The hosts of the family's own provider API (keys there speak this family natively). */
  readonly hosts: readonly string[];
  /** The model names that provider publishes, for the catalog fallback of model lists. */
  readonly publishes: RegExp;

  /** The error body in this family's envelope. */
  errorBody(error: HttpError): unknown;
  /** The event that ends a stream which failed after it started, so the SDK raises an error. */
  streamErrorEvent(error: HttpError): Uint8Array;

  /** The wire formats of its model calls, the family's own API first (key formats default to these). */
  readonly wires: readonly ModelWire[];
  /** The key format a call of this family is in (OpenAI's Responses endpoints are `responses`, the rest `openai`). */
  keyFormatOf(call: Pick<ClientCall, "endpoint">): KeyFormat;

  /** Whether the body names the model (and so carries an edited model name upstream). */
  readonly modelInBody: boolean;
  /**
   * For a family whose model is in the path: the body's own mentions of the requested
   * model that the upstream checks against the path's (Gemini's batchEmbedContents
   * `requests[].model`), written for the effective model; undefined when none.
   */
  bodyForModel?(json: Record<string, unknown>, requestedModel: string, effectiveModel: string): Record<string, unknown> | undefined;
  /** The upstream path of a call for its effective model. */
  upstreamPath(call: Pick<ClientCall, "endpoint" | "operation" | "version">, effectiveModel: string | undefined): string;
  /** Sets a provider key's secret where this family's upstreams read it. */
  authorize(headers: Headers, secret: string): void;

  /**
   * The caller's tightest limits in this family's rate-limit headers (docs/api.md,
   * "Rate-limit headers"); absent when the family's provider sends none (Gemini).
   */
  rateLimitHeaders?(limits: RateLimits, now: number): Record<string, string>;

  /**
   * What a call of this family asks of its output, when the family names it its own way
   * (Gemini's generation settings); absent: the common spellings (`max_tokens`,
   * `max_completion_tokens`, `max_output_tokens`, `n`), read by metering.
   */
  outputAsked?(json: Record<string, unknown> | undefined): OutputAsked;

  /** The answer of the family's token-counting call for a count the router made itself (Anthropic `count_tokens`, Gemini `countTokens`). */
  tokenCountAnswer?(tokens: number): unknown;
  /** Usage from a complete JSON answer; undefined when it reports none. */
  usageFromJson(body: unknown): Usage | undefined;
  /** A usage reader for one stream. */
  streamUsageTap(): StreamUsageTap;

  /** The caller's model list in this family's shape, paged by its own query parameters. */
  modelList(ids: readonly string[], query: URLSearchParams, facts: (id: string) => ModelFacts): unknown;
  /** One model in this family's shape. */
  model(id: string, facts: (id: string) => ModelFacts): unknown;
  /** The path (and query) of one page of an upstream's model list, and the headers carrying the key's secret. */
  upstreamModelList(secret: string, cursor: string | undefined): { path: string; headers: Record<string, string> };
  /** Reads one page of an upstream's model list. */
  readModelPage(body: unknown): UpstreamModelPage;
}
