/**
 * Responses `namespace` tools group function tools under a shared name (Codex offers its
 * sub-agent tools so), and the model's calls name the namespace apart from the function.
 * No other format groups tools, so a namespace's functions travel flat, named
 * `<namespace>__<function>` (letters, digits, `_` and `-` only, which every format
 * accepts in a tool name), and calls coming back are split again against the namespaces
 * the client's request declared.
 */
import { isObject, type JsonObject } from "../../../json.ts";

const SEPARATOR = "__";

export const flatName = (namespace: string, name: string) => `${namespace}${SEPARATOR}${name}`;

/** The namespaces a client's Responses request declares. */
export function namespacesOf(request: JsonObject | undefined): ReadonlySet<string> {
  const names = new Set<string>();
  const tools = request?.tools;
  if (!Array.isArray(tools)) return names;
  for (const tool of tools) if (isObject(tool) && tool.type === "namespace" && typeof tool.name === "string") names.add(tool.name);
  return names;
}

/** A flat call name as the client declared it: its namespace (when one of the request's) and function name. */
export function splitName(name: string, namespaces: ReadonlySet<string>): { namespace?: string; name: string } {
  if (namespaces.size === 0) return { name };
  for (let at = name.indexOf(SEPARATOR); at > 0; at = name.indexOf(SEPARATOR, at + 1)) {
    const namespace = name.slice(0, at);
    if (namespaces.has(namespace)) return { namespace, name: name.slice(at + SEPARATOR.length) };
  }
  return { name };
}
