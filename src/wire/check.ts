/**
 * Checks a request body against its wire model and refuses it with the service's own
 * 400 (`badRequest`), naming the top-level field at fault in `param` and saying what
 * is wrong in words. The model states the structure (types, lengths, ranges, unknown
 * fields); rules a schema cannot state stay in the domain: per field (a valid address,
 * IP ranges, patterns) as `rules` this checker runs in field order, and across fields
 * on the typed value it returns.
 */
import { Kind, type Static, type TObject, type TSchema } from "@sinclair/typebox";
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
  /** The unit a bound is in ("credits"), said after it: "must be at most 1000000 credits". */
  unit?: string;
}

/**
 * The domain's rules for single fields, which a schema cannot state (a valid address, an
 * IP range): each gets its field's value once the value has the model's type, and
 * throws its own 400. They run in the model's field order, interleaved with the
 * structural checks, so a body with several faults is refused for the first field at
 * fault whatever the kind of fault, as the endpoints always did.
 */
export type FieldRules<T extends TObject> = {
  [K in keyof Static<T>]?: (value: Exclude<Static<T>[K], undefined>) => void;
};

export type BodyCheck<T extends TSchema> = (body: unknown) => Static<T>;

/**
 * Compiles `schema` once; the returned function checks a body (structure and field
 * rules) and returns it typed, or throws a 400. Rules across fields are the domain's,
 * on the typed value.
 */
export function bodyCheck<T extends TObject>(schema: T, options: CheckOptions & { rules?: FieldRules<T> } = {}): BodyCheck<T> {
  const compiled = TypeCompiler.Compile(schema);
  const fields = Object.keys(schema.properties);
  const rules = Object.entries(options.rules ?? {}) as Array<[string, (value: unknown) => void]>;
  const ruleAt = rules.map(([field, rule]) => ({ index: fields.indexOf(field), field, rule })).sort((a, b) => a.index - b.index);
  return (body) => {
    const fault = compiled.Check(body) ? undefined : firstFault(compiled.Errors(body), fields, options);
    // Unknown fields (and, when asked, missing ones) come before any field's own check.
    if (fault && fault.rank < 2) throw refusal(fault.error, fields);
    for (const { index, field, rule } of ruleAt) {
      if (fault && fault.index <= index) break;
      const value = (body as Record<string, unknown>)[field];
      if (value !== undefined) rule(value);
    }
    if (fault) throw refusal(fault.error, fields);
    return body as Static<T>;
  };
}

function refusal(error: ValueError, fields: string[]) {
  return badRequest(describe(error, fields), segments(error.path)[0] || undefined);
}

/** RFC 6901 path → its keys (`/ModelLimits/gpt-4~1x/rpm` → ModelLimits, gpt-4/x, rpm). */
function segments(path: string): string[] {
  return path
    .split("/")
    .slice(1)
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** The fault reported: the lowest (rank, field position), the first one met among equals. */
function firstFault(errors: Iterable<ValueError>, fields: string[], options: CheckOptions): { error: ValueError; rank: number; index: number } | undefined {
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
  return best;
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
    const keys = segments(error.path);
    if (keys.length === 1) return `Unknown field ${where}; accepted fields: ${fields.join(", ")}`;
    const allowed = Object.keys((error.schema as { properties?: object }).properties ?? {});
    return `${subject(error.path.slice(0, error.path.lastIndexOf("/")))}: unknown member ${JSON.stringify(keys.at(-1))} (allowed: ${allowed.join(", ")})`;
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
  const s = error.schema as Record<string, unknown> & Expected;
  const unit = s.unit ? ` ${s.unit}` : "";
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
      return s.minimum === 0 ? "not be negative" : `be at least ${String(s.minimum)}${unit}`;
    case ValueErrorType.NumberExclusiveMinimum:
    case ValueErrorType.IntegerExclusiveMinimum:
      return `be greater than ${String(s.exclusiveMinimum)}${unit}`;
    case ValueErrorType.NumberMaximum:
    case ValueErrorType.IntegerMaximum:
      // Past 2^53 - 1 a double no longer holds every integer: the value was not the integer sent.
      if (s.maximum === Number.MAX_SAFE_INTEGER) return "be an integer of at most 2^53 - 1";
      return `be at most ${String(s.maximum)}${unit}`;
    case ValueErrorType.NumberExclusiveMaximum:
    case ValueErrorType.IntegerExclusiveMaximum:
      return `be less than ${String(s.exclusiveMaximum)}${unit}`;
    case ValueErrorType.ArrayMinItems:
      return `hold at least ${String(s.minItems)} entries`;
    case ValueErrorType.ArrayMaxItems:
      return `hold at most ${String(s.maxItems)} entries`;
    case ValueErrorType.Kind:
      // Text (common.ts): a string whose lengths count characters.
      if ((error.schema as TSchema)[Kind] === "Text") {
        if (typeof error.value !== "string") return "be a string";
        const length = [...error.value].length;
        if (s.maxLength !== undefined && length > Number(s.maxLength)) return `be at most ${String(s.maxLength)} characters`;
        return s.minLength === 1 ? "not be empty" : `be at least ${String(s.minLength)} characters`;
      }
      return `match its type (${error.message})`;
    default:
      // TypeBox's own wording ("Expected union value"): still names the field.
      return `match its type (${error.message})`;
  }
}
