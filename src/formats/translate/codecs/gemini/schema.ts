/**
 * Gemini's `Schema` (an OpenAPI 3.0 subset, types written upper-case as the proto enum
 * names them: "STRING", "OBJECT") as JSON Schema, the shared model's language for tool
 * parameters and structured output.
 */
import { isObject, type JsonObject } from "../../../json.ts";

/** Keys whose value is one schema, and keys whose value is a list or a map of schemas. */
const ONE_SCHEMA = ["items", "additionalProperties", "not"];
const SCHEMA_LIST = ["anyOf", "oneOf", "allOf", "prefixItems"];
const SCHEMA_MAP = ["properties", "$defs", "definitions"];
/**
 * Bounds Gemini's Schema holds as int64, which proto JSON writes as strings
 * (`"minItems": "1"`, as the @google/genai types have them); JSON Schema takes integers.
 */
const INT64 = new Set(["minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"]);

/** An int64 bound as a number when it is a whole number written as a string; anything else as given. */
const int64 = (value: unknown): unknown => (typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value);

/**
 * One schema as JSON Schema: types lower-cased, `nullable: true` folded into the type
 * (`["string", "null"]`, JSON Schema's way of saying it), int64 bounds as numbers, and
 * `propertyOrdering` (a Gemini-only ordering hint) dropped; every other keyword kept as
 * written.
 */
export function jsonSchemaOf(schema: unknown): unknown {
  if (!isObject(schema)) return schema;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "propertyOrdering" || key === "nullable") continue;
    if (key === "type") out.type = typeof value === "string" ? value.toLowerCase() : value;
    else if (ONE_SCHEMA.includes(key)) out[key] = jsonSchemaOf(value);
    else if (SCHEMA_LIST.includes(key) && Array.isArray(value)) out[key] = value.map(jsonSchemaOf);
    else if (SCHEMA_MAP.includes(key) && isObject(value)) out[key] = Object.fromEntries(Object.entries(value).map(([name, s]) => [name, jsonSchemaOf(s)]));
    else if (INT64.has(key)) out[key] = int64(value);
    else out[key] = value;
  }
  if (schema.nullable === true) out.type = typeof out.type === "string" ? [out.type, "null"] : out.type;
  return out;
}
