/**
 * Checks a request body against its wire model and refuses it with the service's own
 * 400 (`badRequest`), naming the top-level field at fault in `param` and saying what
 * is wrong in words. Only the structure is checked here (types, lengths, ranges,
 * unknown fields); rules a schema cannot state (a valid address, IP ranges, patterns,
 * rules across fields) stay in the domain, which receives the typed value.
 */
import { Kind, type Static, type TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { ValueErrorType, type ValueError } from "@sinclair/typebox/errors";
import { badRequest } from "../core/errors.ts";

export interface CheckOptions {
  /**
   * Report a missing required field before an unknown one. By default unknown fields
   * come first, then the fields in the order the model declares them: which field a
   * body with several faults is refused for is part of the API, and each endpoint
   * keeps the order it always had.
   */
  requiredFirst?: boolean;
}

/**
 * A schema option read by the checker: what a value of this node must be, in words
 * ("an account ID, name or email"). Every fault at that node is then reported as
 * "<field> must be <expected>", where the generic wording would say less.
 */
export interface Expected {
  expected?: string;
}

export type BodyCheck<T extends TSchema> = (body: unknown) => Static<T>;

/** Compiles `schema` once; the returned function checks a body and returns it typed, or throws a 400. */
export function bodyCheck<T extends TSchema>(schema: T, options: CheckOptions = {}): BodyCheck<T> {
  const compiled = TypeCompiler.Compile(schema);
  const fields = Object.keys((schema as { properties?: Record<string, unknown> }).properties ?? {});
  return (body) => {
    if (compiled.Check(body)) return body;
    const fault = firstFault(compiled.Errors(body), fields, options);
    throw badRequest(fault ? describe(fault, fields) : "Request body does not match the expected shape", fault ? segments(fault.path)[0] : undefined);
  };
}

/** RFC 6901 path → its keys (`/ModelLimits/gpt-4~1x/rpm` → ModelLimits, gpt-4/x, rpm). */
function segments(path: string): string[] {
  return path
    .split("/")
    .slice(1)
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** The fault reported: the lowest (rank, field position), the first one met among equals. */
function firstFault(errors: Iterable<ValueError>, fields: string[], options: CheckOptions): ValueError | undefined {
  let best: { error: ValueError; rank: number; index: number } | undefined;
  for (const error of errors) {
    const keys = segments(error.path);
    const top = keys[0] ?? "";
    const unknown = keys.length === 1 && error.type === ValueErrorType.ObjectAdditionalProperties;
    const missing = keys.length === 1 && error.type === ValueErrorType.ObjectRequiredProperty;
    const rank = unknown ? (options.requiredFirst ? 1 : 0) : missing && options.requiredFirst ? 0 : 2;
    // Unknown fields are not in the model: they keep the body's order among themselves.
    const index = unknown ? 0 : fields.indexOf(top);
    if (!best || rank < best.rank || (rank === best.rank && index < best.index)) best = { error, rank, index };
  }
  return best?.error;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** How a path is named in a message: `ModelLimits["gpt-4o*"].rpm`, `IDs[3]`, `config.models`. */
function subject(path: string): string {
  const [top = "body", ...rest] = segments(path);
  return top + rest.map((key) => (/^\d+$/.test(key) ? `[${key}]` : IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`)).join("");
}

const isNull = (schema: TSchema) => schema[Kind] === "Null";

/** The fault in words, e.g. "RPM must be an integer", "Unknown field Colour; accepted fields: …". */
function describe(error: ValueError, fields: string[]): string {
  const where = subject(error.path);
  if (error.type === ValueErrorType.ObjectAdditionalProperties) {
    return segments(error.path).length === 1 ? `Unknown field ${where}; accepted fields: ${fields.join(", ")}` : `Unknown field ${where}`;
  }
  if (error.type === ValueErrorType.ObjectRequiredProperty) return `${where} is required`;
  const expected = (error.schema as Expected).expected;
  if (error.type === ValueErrorType.Union) {
    // `T | null` (a field that `null` clears): the fault is T's.
    const variants = (error.schema as { anyOf?: TSchema[] }).anyOf ?? [];
    const index = variants.length === 2 ? variants.findIndex((v) => !isNull(v)) : -1;
    if (!expected && index >= 0 && variants.some(isNull)) {
      const inner = error.errors[index]?.First();
      if (inner) return describe(inner, fields);
    }
  }
  return `${where} must ${expected ? `be ${expected}` : rule(error)}`;
}

/** What the value must be, from the kind of fault and the schema's bound. */
function rule(error: ValueError): string {
  const s = error.schema as Record<string, unknown>;
  switch (error.type) {
    case ValueErrorType.String:
      return "be a string";
    case ValueErrorType.Number:
      return "be a finite number";
    case ValueErrorType.Integer:
      return "be an integer";
    case ValueErrorType.Boolean:
      return "be true or false";
    case ValueErrorType.Object:
      return "be an object";
    case ValueErrorType.Array:
      return "be an array";
    case ValueErrorType.Literal:
      return `be ${JSON.stringify(s.const)}`;
    case ValueErrorType.StringMaxLength:
      return `be at most ${String(s.maxLength)} characters`;
    case ValueErrorType.StringMinLength:
      return s.minLength === 1 ? "not be empty" : `be at least ${String(s.minLength)} characters`;
    case ValueErrorType.NumberMinimum:
    case ValueErrorType.IntegerMinimum:
      return s.minimum === 0 ? "not be negative" : `be at least ${String(s.minimum)}`;
    case ValueErrorType.NumberExclusiveMinimum:
    case ValueErrorType.IntegerExclusiveMinimum:
      return `be greater than ${String(s.exclusiveMinimum)}`;
    case ValueErrorType.NumberMaximum:
    case ValueErrorType.IntegerMaximum:
      return `be at most ${String(s.maximum)}`;
    case ValueErrorType.NumberExclusiveMaximum:
    case ValueErrorType.IntegerExclusiveMaximum:
      return `be less than ${String(s.exclusiveMaximum)}`;
    case ValueErrorType.ArrayMinItems:
      return `hold at least ${String(s.minItems)} entries`;
    case ValueErrorType.ArrayMaxItems:
      return `hold at most ${String(s.maxItems)} entries`;
    default:
      // TypeBox's own wording ("Expected union value"): still names the field.
      return `match its type (${error.message})`;
  }
}
