/**
 * A schema as Anthropic's structured outputs (`output_config.format`) and strict tools
 * take it. Anthropic requires every object closed (`additionalProperties: false`; the API
 * refuses an object without it) and refuses value constraints its grammar cannot enforce
 * (400 "For 'integer' type, property 'minimum' is not supported"). Other formats' schemas
 * often leave objects unsaid (Gemini's `responseSchema` has no such keyword) and carry
 * such constraints (OpenAI strict schemas: a score from 1 to 10). So, as Anthropic's own
 * SDKs do before sending, an object that says nothing is closed (the answer still matches
 * the client's schema) and the constraints move into the description, where the model
 * reads them. An object the client opened (`true`, or a schema for the other properties,
 * a map) cannot be had from Anthropic, and the caller refuses it.
 */
import { isObject, type JsonObject } from "../../../json.ts";

const ONE = ["items", "not"];
const LIST = ["anyOf", "allOf", "oneOf", "prefixItems"];
const MAP = ["properties", "$defs", "definitions"];

/** Constraints Anthropic's grammar does not take, by the type they constrain. */
const NUMBER_BOUNDS = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"];
const STRING_BOUNDS = ["minLength", "maxLength"];
/** The string formats Anthropic enforces; others are described. */
const FORMATS = new Set(["date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"]);

/** The schema as Anthropic takes it; undefined when an object asks for other properties. */
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
  describeUnenforced(out);
  return out;
}

/** Moves the constraints Anthropic refuses into the description, as `{key: value, …}` after the client's own. */
function describeUnenforced(schema: JsonObject): void {
  const moved: string[] = [];
  const move = (key: string) => {
    if (!(key in schema)) return;
    moved.push(`${key}: ${JSON.stringify(schema[key])}`);
    delete schema[key];
  };
  for (const key of [...NUMBER_BOUNDS, ...STRING_BOUNDS]) move(key);
  // Arrays: only a minItems of 0 or 1 is enforced.
  if (schema.minItems !== 0 && schema.minItems !== 1) move("minItems");
  move("maxItems");
  if (typeof schema.format === "string" && !FORMATS.has(schema.format)) move("format");
  if (moved.length === 0) return;
  const said = typeof schema.description === "string" && schema.description !== "" ? `${schema.description}\n\n` : "";
  schema.description = `${said}{${moved.join(", ")}}`;
}

/** An object schema by its type (`"object"` or a list holding it) or by its properties. */
function isObjectSchema(schema: JsonObject): boolean {
  const type = schema.type;
  return type === "object" || (Array.isArray(type) && type.includes("object")) || isObject(schema.properties);
}
