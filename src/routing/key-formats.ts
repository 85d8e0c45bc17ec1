/**
 * Which wire formats a Provider Key speaks natively (issue 16): its `config.formats`, or
 * when absent a default from its provider type and host. Routing prefers keys that speak
 * the client's format; the others serve a call only through a translator.
 */
import type { Family } from "../formats/family.ts";
import { familyOfHost, formatOf } from "../formats/registry.ts";
import { KEY_FORMATS, type KeyFormat } from "../wire/constants.ts";
import type { ProviderConfig } from "./provider-config.ts";

/** What each family's own provider API speaks (its `hosts`): the family's wires (OpenAI's has both Chat and Responses). */
const familyFormats = (family: Family): KeyFormat[] => formatOf(family).wires.map((wire) => wire.keyFormat);

/** Per provider type, when the type alone decides (Vertex: Gemini, Claude publisher models, the OpenAI-compatible chat endpoint). */
const TYPE_FORMATS: Partial<Record<ProviderConfig["provider_type"], readonly KeyFormat[]>> = {
  azure: ["openai", "responses"],
  vertex: ["gemini", "anthropic", "openai"],
};

const OPENAI_COMPATIBLE_PATH = /\/openai\/?$/;

function pathOf(provider: string): string {
  try {
    return new URL(provider).pathname;
  } catch {
    return "";
  }
}

/**
 * The default of `config.formats`: by provider type, else by the family whose provider
 * host the URL names, else every format (a standard key on a host the router does not
 * know is passed each call as the client sent it, as before translation existed).
 */
export function defaultFormats(provider: string, config: Pick<ProviderConfig, "provider_type">): KeyFormat[] {
  const byType = TYPE_FORMATS[config.provider_type];
  if (byType) return [...byType];
  // A provider's OpenAI-compatible endpoint (Google's `…/v1beta/openai`) speaks OpenAI Chat, whatever its host.
  if (OPENAI_COMPATIBLE_PATH.test(pathOf(provider))) return ["openai"];
  const family = familyOfHost(provider);
  return family ? familyFormats(family) : [...KEY_FORMATS];
}

/** The formats a key speaks: its own list when it has one, else the default. */
export function formatsOf(provider: string, config: ProviderConfig): KeyFormat[] {
  return config.formats ?? defaultFormats(provider, config);
}

/** What routing reads of a key's formats, made once per pool reload. */
export interface KeyFormats {
  readonly set: ReadonlySet<KeyFormat>;
  /**
   * A Vertex key speaks by publisher: Claude models only as Anthropic (rawPredict), every
   * other model only through Google's paths and its OpenAI-compatible endpoint, which know
   * Gemini and self-deployed models but not Claude. A call in another format is translated.
   */
  readonly byPublisher: boolean;
}

export function keyFormats(provider: string, config: ProviderConfig): KeyFormats {
  return {
    set: new Set(formatsOf(provider, config)),
    byPublisher: config.provider_type === "vertex",
  };
}

/** Whether a key speaks a format natively for a model. */
export function speaks(formats: KeyFormats, format: KeyFormat, model: string | undefined): boolean {
  if (!formats.set.has(format)) return false;
  return !formats.byPublisher || (format === "anthropic") === (model ?? "").startsWith("claude");
}
