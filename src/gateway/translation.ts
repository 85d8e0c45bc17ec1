/**
 * When a call is translated (issue 16): the client's wire format, how well a key fits it
 * (natively, through a translator, or not at all), and the upstream call a translator
 * makes of it. The translators themselves are pure (`formats/translate/`); this module
 * only decides and assembles.
 */
import { HttpError } from "../core/errors.ts";
import { countContent, estimateTokens } from "./usage/content-count.ts";
import type { Family } from "../formats/family.ts";
import type { ClientCall } from "../formats/format.ts";
import { translatorFor } from "../formats/translate/index.ts";
import type { Translator, UpstreamTarget, Wire } from "../formats/translate/translator.ts";
import { FORMATS, formatOf } from "../formats/registry.ts";
import { speaks, type KeyFormats } from "../routing/key-formats.ts";
import type { KeyPool, KeyRank } from "../routing/key-pool.ts";
import type { UpstreamCall } from "../upstreams/types.ts";
import type { KeyFormat } from "../wire/constants.ts";

/** The key format and family that carry each translatable wire, as the formats declare them. */
const WIRES = new Map<Wire, { format: KeyFormat; family: Family }>(
  Object.values(FORMATS).flatMap((f) => f.wires.map((w) => [w.wire, { format: w.keyFormat, family: f.family }] as const)),
);
const WIRE_NAMES = [...WIRES.keys()];

/** The key format a call is in: OpenAI's family carries Chat (and the rest of its surface) and Responses. */
export const clientFormatOf = (call: Pick<ClientCall, "family" | "endpoint">): KeyFormat => formatOf(call.family).keyFormatOf(call);

/**
 * The translatable wire a call is in, when it is one a translator reads: the model calls
 * of each format (not its token counts, embeddings, objects or other endpoints).
 */
export const clientWireOf = (call: Pick<ClientCall, "family" | "endpoint" | "operation">): Wire | undefined =>
  formatOf(call.family).wires.find((wire) => wire.carries(call))?.wire;

/** How keys fit one call: made once per call, asked once per key considered. */
export interface CallFit {
  readonly format: KeyFormat;
  /** 2: speaks the call's format; 1: serves it through a translator; 0: cannot serve it. */
  readonly rank: KeyRank;
  /** The translator a key needs, or undefined when it speaks the call's format (or cannot serve it). */
  translatorFor(formats: KeyFormats): Translator | undefined;
}

/** From each client wire, the translator to each key format (the table does not change at run time). */
const ROUTES = new Map<Wire, ReadonlyMap<KeyFormat, Translator>>(
  WIRE_NAMES.map((client) => [
    client,
    new Map(
      WIRE_NAMES.flatMap((upstream) => {
        const translator = upstream === client ? undefined : translatorFor(client, upstream);
        return translator ? [[WIRES.get(upstream)!.format, translator] as const] : [];
      }),
    ),
  ]),
);
const NO_ROUTES: ReadonlyMap<KeyFormat, Translator> = new Map();

export function callFit(call: Pick<ClientCall, "family" | "endpoint" | "operation">, model: string | undefined): CallFit {
  const format = clientFormatOf(call);
  const client = clientWireOf(call);
  const routes = (client && ROUTES.get(client)) || NO_ROUTES;
  /**
   * A key that speaks several formats is translated to the first of its list that a
   * translator reaches: a key's formats are in its order of preference (the defaults
   * put the provider's own API first, so a Vertex key serves Gemini models as Gemini,
   * not through its OpenAI-compatible endpoint).
   */
  const translated = (formats: KeyFormats): Translator | undefined => {
    if (routes.size === 0) return undefined;
    for (const spoken of formats.set) {
      const translator = routes.get(spoken);
      if (translator && speaks(formats, spoken, model)) return translator;
    }
    return undefined;
  };
  return {
    format,
    rank: (key) => (speaks(key.formats, format, model) ? 2 : translated(key.formats) ? 1 : 0),
    translatorFor: (formats) => (speaks(formats, format, model) ? undefined : translated(formats)),
  };
}

/** The family whose upstream API a translator's requests go to. */
export const upstreamFamilyOf = (translator: Translator): Family => WIRES.get(translator.upstream)!.family;

/** Headers only the client's own format understands (Anthropic's version and betas): not sent to another format's upstream. */
const foreignHeader = (name: string, upstream: Family) => upstream !== "anthropic" && name.startsWith("anthropic-");

/**
 * The upstream call of a translated request: the client's body (with the effective
 * model) in the upstream's format, to the translator's path. Throws the translator's
 * 400 when the request holds something the upstream cannot carry; nothing is sent then.
 */
export function translatedCall(call: ClientCall, translator: Translator, effectiveModel: string | undefined, maxTokens: number): UpstreamCall {
  const family = upstreamFamilyOf(translator);
  const json = call.json ?? {};
  const body = translator.request(effectiveModel === undefined || call.endpoint.model !== "body" ? json : { ...json, model: effectiveModel }, {
    maxTokens,
    model: effectiveModel ?? call.requestedModel,
    stream: call.stream,
  });
  const target = translator.upstreamTarget(effectiveModel ?? call.requestedModel, call.stream);
  const headers = new Headers();
  call.headers.forEach((value, name) => {
    if (!foreignHeader(name, family)) headers.set(name, value);
  });
  headers.set("content-type", "application/json");
  return {
    family,
    method: "POST",
    path: target.path,
    search: target.search,
    model: effectiveModel,
    stream: call.stream,
    json: body,
    bytes: undefined,
    headers,
    translated: true,
    // The translated body is the router's own: a stream_options in it was put there to meter.
    ...(body.stream_options !== undefined && { addedStreamOptions: true }),
  };
}

/**
 * The request a chosen key is sent: the client's own, or its translation for the key's
 * translator, made once per translator the call's keys need (a body, or the translator's
 * refusal as an HttpError).
 */
export function upstreamCalls(call: ClientCall, upstream: UpstreamCall, effectiveModel: string | undefined, maxTokens: number): (translator: Translator | undefined) => UpstreamCall | HttpError {
  const translated = new Map<Translator, UpstreamCall | HttpError>();
  return (translator) => {
    if (!translator) return upstream;
    let made = translated.get(translator);
    if (!made) {
      try {
        made = translatedCall(call, translator, effectiveModel, maxTokens);
      } catch (error) {
        if (!(error instanceof HttpError)) throw error;
        made = error;
      }
      translated.set(translator, made);
    }
    return made;
  };
}

/** Whether an OpenAI Chat client asked for the usage chunk at the end of its stream. */
export function clientWantsUsageChunk(call: ClientCall): boolean {
  const options = call.json?.stream_options;
  return options !== null && typeof options === "object" && (options as Record<string, unknown>).include_usage === true;
}

/** The 400 of a call no key of its Level can serve, in any way: naming the model and what its keys speak. */
export function unservedFormat(model: string | undefined, format: KeyFormat, spoken: ReadonlySet<KeyFormat>): HttpError {
  const list = [...spoken].join(", ") || "none";
  return new HttpError(
    "invalid_request",
    `Model ${model ?? "(none)"} is served by keys that speak ${list}; this call is in the ${format} format, which none of them speaks and no translator carries to theirs`,
    { code: "unsupported_format", param: "model" },
  );
}

const utf8 = new TextEncoder();

/**
 * A count of a call's input tokens made here, for a counting call no key can answer in
 * its format (docs/translation.md): the text of its messages, parts and system prompt
 * (the content members the estimates of usage read), at about four bytes a token.
 */
export function localTokenCount(call: Pick<ClientCall, "bytes" | "json">): number {
  const system = call.json?.system;
  const systemBytes = typeof system === "string" ? utf8.encode(system).byteLength : 0;
  return estimateTokens(countContent(call.bytes) + systemBytes);
}

/**
 * When no key of the Level (or its backups) could serve the call's format at all,
 * whatever their health: the formats they speak, to say so in a 400 rather than a
 * misleading "try again later". Undefined when some key could (or the Level has none).
 */
export function unservedFormats(backups: ReadonlyMap<number, number>, pool: Pick<KeyPool, "keysOf">, level: number, fit: CallFit): Set<KeyFormat> | undefined {
  const spoken = new Set<KeyFormat>();
  const seen = new Set<number>();
  for (let current: number | undefined = level; current !== undefined && !seen.has(current); current = backups.get(current)) {
    seen.add(current);
    for (const key of pool.keysOf(current)) {
      if (!key.status) continue;
      if (fit.rank(key) > 0) return undefined;
      for (const format of key.formats.set) spoken.add(format);
    }
  }
  return spoken.size > 0 ? spoken : undefined;
}

/**
 * When the call's Level chain will have a key for it again by itself, for the Retry-After
 * of a 503 `no_available_key`: milliseconds until the soonest automatic wake-up of an
 * enabled key that can serve the call (at least 0; an awake one, busy with its probe,
 * is a moment away), or undefined when none will: no such key at all, or every one asleep
 * until someone wakes it (manual, auth). Then waiting does not help and the client is told so.
 */
export function keyWakeMs(backups: ReadonlyMap<number, number>, pool: Pick<KeyPool, "keysOf">, level: number, fit: CallFit, now: number): number | undefined {
  let soonest: number | undefined;
  const seen = new Set<number>();
  for (let current: number | undefined = level; current !== undefined && !seen.has(current); current = backups.get(current)) {
    seen.add(current);
    for (const key of pool.keysOf(current)) {
      if (!key.status || fit.rank(key) === 0) continue;
      if (key.sleeping && key.sleepUntil === null) continue;
      const ms = key.sleeping ? Math.max(0, key.sleepUntil! - now) : 0;
      if (soonest === undefined || ms < soonest) soonest = ms;
    }
  }
  return soonest;
}

/**
 * The model call of a client format, as routing sees it (family, endpoint, method): for
 * explaining a route without a request to read.
 */
export function modelCallOf(format: KeyFormat): Pick<ClientCall, "family" | "endpoint" | "operation" | "version"> {
  for (const f of Object.values(FORMATS)) {
    const wire = f.wires.find((w) => w.keyFormat === format);
    if (wire) return { family: f.family, ...wire.modelCall };
  }
  throw new Error(`no family declares the key format ${format}`);
}

/** Where a format's model call goes upstream, untranslated, as its format writes the path. */
export const representativeTarget = (call: Pick<ClientCall, "family" | "endpoint" | "operation" | "version">, model: string): UpstreamTarget => ({
  path: formatOf(call.family).upstreamPath(call, model),
  search: "",
});
