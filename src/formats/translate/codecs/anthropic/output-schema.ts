/**
 * A structured-output schema as Anthropic takes it. Anthropic's `output_config.format`
 * requires every object to be closed (`additionalProperties: false`; its SDK closes them
 * before sending, and the API refuses an object without it). Other formats' schemas often
 * say nothing (Gemini's `responseSchema` has no such keyword), so such an object is
 * closed here: the answer still matches the client's schema. An object the client opened
 * (`true`, or a schema for the other properties, a map) cannot be had from Anthropic, and
 * the caller refuses it.
 */
import { isObject, type JsonObject } from "../../../json.ts";

const ONE = ["items", "not"];
const LIST = ["anyOf", "allOf", "oneOf", "prefixItems"];
const MAP = ["properties", "$defs", "definitions"];

/** The schema with every object closed; undefined when an object asks for other properties. */
export function closedSchema(schema: JsonObject): JsonObject | undefined {
  try {
    return close(schema) as JsonObject;
  } catch (e) {
    if (e === OPEN) return undefined;
    throw e;
  }
}

const OPEN = Symbol("an open object");

function close(schema: unknown): unknown {
  if (!isObject(schema)) return schema;
  const out: JsonObject = { ...schema };
  for (const key of ONE) if (key in out) out[key] = close(out[key]);
  for (const key of LIST) if (Array.isArray(out[key])) out[key] = (out[key] as unknown[]).map(close);
  for (const key of MAP) if (isObject(out[key])) out[key] = Object.fromEntries(Object.entries(out[key] as JsonObject).map(([k, v]) => [k, close(v)]));
  if (isObjectSchema(out)) {
    if (out.additionalProperties === undefined) out.additionalProperties = false;
    else if (out.additionalProperties !== false) throw OPEN;
  }
  return out;
}

/** An object schema by its type (`"object"` or a list holding it) or by its properties. */
function isObjectSchema(schema: JsonObject): boolean {
  const type = schema.type;
  return type === "object" || (Array.isArray(type) && type.includes("object")) || isObject(schema.properties);
}
