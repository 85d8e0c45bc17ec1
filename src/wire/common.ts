/** Building blocks the wire models share. */
import { Kind, Type, TypeRegistry, type StringOptions, type SchemaOptions, type TSchema, type TUnsafe } from "@sinclair/typebox";
import type { Expected } from "./check.ts";

/** A field `null` clears (in a body) or that has no value (in a record). */
export const Nullable = <T extends TSchema>(schema: T, options?: SchemaOptions & Expected) => Type.Union([schema, Type.Null()], options);

/** An instant as ISO 8601 text in UTC (`2025-03-01T08:00:00.000Z`). */
export const Instant = (options?: SchemaOptions) => Type.String({ description: "ISO 8601 instant", ...options });

/** A count or identifier: an integer JSON carries exactly (a double holds integers up to 2^53 - 1). */
export const Count = (options?: SchemaOptions & Expected) => Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, ...options });

/** An amount of credits (a decimal: 1 credit = 10^9 nano-credits). */
export const Credits = (options?: SchemaOptions & Expected) => Type.Number(options);

/** Characters (code points) in a string, without building an array of them. */
function characters(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++, count++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
  }
  return count;
}

// TypeBox's String counts UTF-16 units; JSON Schema's lengths, and the spec's limits
// ("4 to 63 characters"), count characters. A kind of our own checks them so.
TypeRegistry.Set<StringOptions>("Text", (schema, value) => {
  if (typeof value !== "string") return false;
  const length = schema.minLength === undefined && schema.maxLength === undefined ? 0 : characters(value);
  return length >= (schema.minLength ?? 0) && length <= (schema.maxLength ?? Infinity);
});

/**
 * A string whose `minLength`/`maxLength` count characters, as the published JSON Schema
 * says (`type: string`): 40 letters outside the Basic Multilingual Plane are 40, not 80.
 */
export const Text = (options: StringOptions & Expected = {}): TUnsafe<string> => Type.Unsafe<string>({ ...options, [Kind]: "Text", type: "string" });
