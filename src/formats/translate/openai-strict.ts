/**
 * Whether OpenAI's strict mode (Structured Outputs, strict function tools) can take a
 * schema. OpenAI answers 400 to a strict schema any of whose objects leaves out
 * `additionalProperties: false` or a property from `required`; Anthropic and Gemini
 * accept both (optional properties, open objects), so a schema from their clients is
 * often one OpenAI cannot enforce. The Chat and Responses writers send such a schema
 * loose (`strict: false`) rather than have the upstream refuse the call, as the
 * Responses API itself does when `strict` is omitted.
 */
import { isObject } from "../json.ts";

/** Keys holding one subschema, a list of them, or a map of them. */
const ONE = ["items", "not"];
const LIST = ["anyOf", "allOf", "oneOf", "prefixItems"];
const MAP = ["properties", "$defs", "definitions"];

/** The root must be an object schema, and every object in it closed with all its properties required. */
export function strictCompatible(schema: unknown): boolean {
  return isObject(schema) && schema.type === "object" && closedThroughout(schema);
}

function closedThroughout(schema: unknown): boolean {
  if (!isObject(schema)) return true;
  if (isObjectSchema(schema)) {
    if (schema.additionalProperties !== false) return false;
    const names = isObject(schema.properties) ? Object.keys(schema.properties) : [];
    const required = Array.isArray(schema.required) ? schema.required : [];
    if (names.some((name) => !required.includes(name))) return false;
  }
  for (const key of ONE) if (!closedThroughout(schema[key])) return false;
  for (const key of LIST) {
    const list = schema[key];
    if (Array.isArray(list) && !list.every(closedThroughout)) return false;
  }
  for (const key of MAP) {
    const map = schema[key];
    if (isObject(map) && !Object.values(map).every(closedThroughout)) return false;
  }
  return true;
}

/** An object schema by its type (`"object"` or a list holding it) or by its properties. */
function isObjectSchema(schema: Record<string, unknown>): boolean {
  const type = schema.type;
  return type === "object" || (Array.isArray(type) && type.includes("object")) || isObject(schema.properties);
}

/** The `strict` to send: the client's own when it gave one it can have, else whether the schema allows it. */
export const strictFor = (asked: boolean | undefined, schema: unknown): boolean => (asked === false ? false : strictCompatible(schema));
