/**
 * What marks a conversation's part as content the body does not hold (an image or
 * file by URL or id, a server-side container), across the wire formats: the unsized
 * check of metering (metering/unsized-input.ts) reads these fields on parsed parts, and
 * a large body's conversation left as text (lazy-body.ts) is searched for them.
 */

/** Part types whose token cost the body does not bound. */
export const UNSIZED_TYPES: ReadonlySet<string> = new Set(["file", "input_file", "container_upload", "item_reference", "mcp_tool_use", "server_tool_use"]);

/** Part fields that reference content held elsewhere (Gemini file data, OpenAI file ids). */
export const REFERENCE_FIELDS = ["file_id", "fileData", "file_data", "fileUri", "file_uri"] as const;

/** Part fields whose value decides whether the part is sized by its bytes (an image by URL or inline, an Anthropic source, Gemini inline data). */
export const SOURCE_FIELDS = ["image_url", "source", "inlineData", "inline_data"] as const;

/** Every field name besides `type` that the unsized check looks at in a part. */
export const PART_MARKER_FIELDS: ReadonlySet<string> = new Set<string>([...REFERENCE_FIELDS, ...SOURCE_FIELDS]);
