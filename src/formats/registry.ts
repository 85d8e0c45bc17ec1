import type { Family } from "./family.ts";
import type { WireFormat } from "./format.ts";
import { anthropic } from "./anthropic/index.ts";
import { gemini } from "./gemini/index.ts";
import { openai } from "./openai/index.ts";

/** Every family the router serves, by name. Adding one is adding its folder and a line here. */
export const FORMATS: Readonly<Record<Family, WireFormat>> = { openai, anthropic, gemini };

/** The order paths are claimed in: the specific families first, OpenAI (which takes the rest) last. */
const CLAIM_ORDER: readonly WireFormat[] = [anthropic, gemini, openai];

export const formatOf = (family: Family): WireFormat => FORMATS[family];

/** The family whose path this is: its envelope and key header apply. */
export function familyOf(path: string): Family {
  for (const format of CLAIM_ORDER) if (format.ownsPath(path)) return format.family;
  return "openai";
}

const under = (path: string, prefix: string) => path === prefix || path.startsWith(`${prefix}/`);

/**
 * The paths the three SDKs share: the model lists (`GET /v1/models[/{id}]`; only a POST
 * there is a Gemini method, `{model}:{method}`, so a model id holding a colon, such as
 * `ft:gpt-4o:org::abc` or `llama3:latest`, is still a list path) and the files API
 * (`/v1/files[/…]`: OpenAI's, Anthropic's beta Files API and `@google/genai` 3.x's files
 * all live there). On them the client tells itself by its headers, so its key header is
 * accepted and its answers and refusals come in its own shape.
 */
const isSharedPath = (method: string, path: string) =>
  (under(path, "/v1/models") && (method !== "POST" || !gemini.ownsPath(path))) || under(path, "/v1/files");

/**
 * The family of a request: its path's, except on the paths the SDKs share, where the
 * client tells itself by its headers.
 */
export function familyOfRequest(request: Pick<Request, "headers" | "method">, path: string): Family {
  if (isSharedPath(request.method, path)) {
    for (const format of CLAIM_ORDER) if (format.sentBy?.(request.headers)) return format.family;
    return "openai";
  }
  return familyOf(path);
}

/** The family whose own provider API a URL's host is (`api.anthropic.com` → anthropic); undefined for other hosts. */
export function familyOfHost(url: string): Family | undefined {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return undefined;
  }
  for (const format of CLAIM_ORDER) if (format.hosts.includes(host)) return format.family;
  return undefined;
}
