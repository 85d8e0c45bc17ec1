/** Building blocks the wire models share. */
import { Type, type SchemaOptions, type TSchema } from "@sinclair/typebox";
import type { Expected } from "./check.ts";

/** A field `null` clears (in a body) or that has no value (in a record). */
export const Nullable = <T extends TSchema>(schema: T, options?: SchemaOptions & Expected) => Type.Union([schema, Type.Null()], options);

/** An instant as ISO 8601 text in UTC (`2025-03-01T08:00:00.000Z`). */
export const Instant = (options?: SchemaOptions) => Type.String({ description: "ISO 8601 instant", ...options });

/** A count or identifier: an integer JSON carries exactly (a double holds integers up to 2^53 - 1). */
export const Count = (options?: SchemaOptions & Expected) => Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, ...options });

/** An amount of credits (a decimal: 1 credit = 10^9 nano-credits). */
export const Credits = (options?: SchemaOptions & Expected) => Type.Number(options);
