/**
 * Whether a request's input tokens can be bounded by its body. They cannot when the
 * body only points at content the upstream fetches or already holds (an image or
 * document by URL or file id, a cached context, a previous response, a document whose
 * pages cost more than its bytes) or lets the upstream add input of its own (server
 * tools such as web search, whose results are billed as input). Such a call reserves
 * the model's whole context window as input.
 *
 * Only the containers of conversation content are walked (messages, input, contents,
 * system instructions), never tool schemas or settings, where a property named
 * `file_id` is just a parameter name. The walk is over already-parsed JSON and stops
 * at the first find; a large body's conversation still held as text is not parsed for
 * it when its text names none of the fields the walk looks at (formats/lazy-body.ts, held-json.ts).
 */
import { REFERENCE_FIELDS, UNSIZED_TYPES } from "../formats/content-parts.ts";
import { conversationIsPlain } from "../formats/held-json.ts";

/** Top-level fields that pull in input held upstream. */
const STATEFUL_FIELDS = ["previous_response_id", "conversation", "cachedContent", "cached_content", "mcp_servers", "container"];

/** Fields that hold conversation content, across the four wire formats. */
const CONTENT_FIELDS = ["messages", "input", "contents", "system", "systemInstruction", "system_instruction", "instructions"];

/** Nested fields of a content part that hold more parts (tool results, Gemini parts). */
const NESTED_FIELDS = ["content", "parts", "output"];

/** Tool kinds that only declare a function: the body holds everything they cost. */
const FUNCTION_TOOL_TYPES = new Set(["function", "custom"]);

/** Gemini tool members that declare functions; any other member is a built-in tool. */
const GEMINI_FUNCTION_MEMBERS = new Set(["functionDeclarations", "function_declarations"]);

/** Parts are nested a few levels at most (a tool result holding an image); deeper is not content. */
const MAX_DEPTH = 6;

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => value !== null && typeof value === "object" && !Array.isArray(value);

const isRemoteUrl = (value: unknown): boolean => typeof value === "string" && !value.startsWith("data:");

/** Whether one content part (or message) references content the body does not hold. */
function partIsUnsized(part: Json, depth: number): boolean {
  const type = part.type;
  if (typeof type === "string" && UNSIZED_TYPES.has(type)) return true;
  for (const field of REFERENCE_FIELDS) if (part[field] !== undefined && part[field] !== null) return true;
  // OpenAI chat `image_url: {url}` and Responses `input_image.image_url`: by URL, not inline.
  const imageUrl = part.image_url;
  if (isRemoteUrl(imageUrl) || (isObject(imageUrl) && isRemoteUrl(imageUrl.url))) return true;
  // Anthropic image and document sources: inline images and text are sized by their
  // bytes; a URL, a file id or a PDF (whose pages cost more than its bytes) is not.
  const source = part.source;
  if (isObject(source) && source.type !== undefined) {
    if (source.type === "base64" ? !String(source.media_type ?? "").startsWith("image/") : source.type !== "text" && source.type !== "content") return true;
  }
  // Gemini inline data other than images and audio (a PDF's pages cost more than its bytes).
  const inline = isObject(part.inlineData) ? part.inlineData : isObject(part.inline_data) ? part.inline_data : undefined;
  if (inline) {
    const mime = String(inline.mimeType ?? inline.mime_type ?? "");
    if (!mime.startsWith("image/") && !mime.startsWith("audio/")) return true;
  }
  if (depth >= MAX_DEPTH) return false;
  for (const field of NESTED_FIELDS) {
    if (containsUnsized(part[field], depth + 1)) return true;
  }
  return false;
}

function containsUnsized(value: unknown, depth: number): boolean {
  if (Array.isArray(value)) {
    for (const item of value) if (isObject(item) && partIsUnsized(item, depth)) return true;
    return false;
  }
  return isObject(value) && partIsUnsized(value, depth);
}

/** Whether a tool lets the upstream add input the body does not hold (a server tool). */
function toolAddsInput(tool: unknown): boolean {
  if (!isObject(tool)) return false;
  if (typeof tool.type === "string") return !FUNCTION_TOOL_TYPES.has(tool.type);
  // Anthropic custom tools and Gemini tool groups carry no type.
  return Object.keys(tool).some((member) => !GEMINI_FUNCTION_MEMBERS.has(member) && !isAnthropicCustomMember(member));
}

/** Members of an Anthropic custom tool (no `type`): name, description, schema and options. */
const ANTHROPIC_TOOL_MEMBERS = new Set(["name", "description", "input_schema", "cache_control", "strict", "input_examples", "defer_loading", "allowed_callers"]);
const isAnthropicCustomMember = (member: string) => ANTHROPIC_TOOL_MEMBERS.has(member);

/** Whether the call's input tokens are bounded by its body (see the module comment). */
export function inputIsUnsized(json: Readonly<Json> | undefined): boolean {
  if (!json) return false;
  for (const field of STATEFUL_FIELDS) {
    const value = json[field];
    if (value !== undefined && value !== null && value !== false && value !== "") return true;
  }
  // A Responses reusable prompt (`{id, variables}`); a completions `prompt` is plain text.
  if (isObject(json.prompt)) return true;
  const tools = json.tools;
  if (Array.isArray(tools) && tools.some(toolAddsInput)) return true;
  for (const field of CONTENT_FIELDS) {
    if (conversationIsPlain(json, field)) continue;
    const value = json[field];
    if (typeof value === "string") continue;
    if (Array.isArray(value)) {
      for (const item of value) if (isObject(item) && partIsUnsized(item, 0)) return true;
    } else if (isObject(value) && partIsUnsized(value, 0)) return true;
  }
  return false;
}

/** Whether one part is an image held inline (a data: URL, base64 source, Gemini inline data). */
function isInlineImage(part: Json): boolean {
  const imageUrl = isObject(part.image_url) ? part.image_url.url : part.image_url;
  if (typeof imageUrl === "string") return imageUrl.startsWith("data:");
  const source = part.source;
  if (isObject(source)) return source.type === "base64" && String(source.media_type ?? "").startsWith("image/");
  const inline = isObject(part.inlineData) ? part.inlineData : isObject(part.inline_data) ? part.inline_data : undefined;
  return inline !== undefined && String(inline.mimeType ?? inline.mime_type ?? "").startsWith("image/");
}

function countImages(value: unknown, depth: number): number {
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + countImages(item, depth), 0);
  if (!isObject(value)) return 0;
  let images = isInlineImage(value) ? 1 : 0;
  if (depth < MAX_DEPTH) for (const field of NESTED_FIELDS) images += countImages(value[field], depth + 1);
  return images;
}

/**
 * The images a body holds inline. Their bytes do not bound their tokens: a provider
 * counts a small or very compressible image as more tokens than it has bytes (Gemini
 * every image at least 258, Gemini 3's media resolutions up to 2,240, OpenAI's tiles
 * upscale a small image), so the reservation adds an allowance for each.
 */
export function inlineImageCount(json: Readonly<Json> | undefined): number {
  if (!json) return 0;
  let images = 0;
  for (const field of CONTENT_FIELDS) {
    if (conversationIsPlain(json, field)) continue;
    if (typeof json[field] !== "string") images += countImages(json[field], 0);
  }
  return images;
}
