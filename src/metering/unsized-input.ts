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


/** What the walk of a body's conversation found: content it does not hold, and the images it holds inline. */
interface ContentFacts {
  unsized: boolean;
  inlineImages: number;
}

/**
 * Visits one content part (or message) and the parts nested in it; returns true once the
 * body is known to be unsized (nothing else matters then), and counts the part when it
 * is an image held inline (by the first of: a URL string, a source, inline data).
 */
function visitPart(part: Json, depth: number, facts: ContentFacts): boolean {
  const type = part.type;
  if (typeof type === "string" && UNSIZED_TYPES.has(type)) return (facts.unsized = true);
  for (const field of REFERENCE_FIELDS) if (part[field] !== undefined && part[field] !== null) return (facts.unsized = true);
  let image: boolean | undefined;
  // OpenAI chat `image_url: {url}` and Responses `input_image.image_url`: by URL, or inline as a data: URL.
  const imageUrl = part.image_url;
  const url = isObject(imageUrl) ? imageUrl.url : imageUrl;
  if (typeof url === "string") {
    if (!url.startsWith("data:")) return (facts.unsized = true);
    image = true;
  }
  // Anthropic image and document sources: inline images and text are sized by their
  // bytes; a URL, a file id or a PDF (whose pages cost more than its bytes) is not.
  const source = part.source;
  if (isObject(source)) {
    const inlineImage = source.type === "base64" && String(source.media_type ?? "").startsWith("image/");
    if (source.type !== undefined && (source.type === "base64" ? !inlineImage : source.type !== "text" && source.type !== "content")) return (facts.unsized = true);
    image ??= inlineImage;
  }
  // Gemini inline data other than images and audio (a PDF's pages cost more than its bytes).
  const inline = isObject(part.inlineData) ? part.inlineData : isObject(part.inline_data) ? part.inline_data : undefined;
  if (inline) {
    const mime = String(inline.mimeType ?? inline.mime_type ?? "");
    if (!mime.startsWith("image/") && !mime.startsWith("audio/")) return (facts.unsized = true);
    image ??= mime.startsWith("image/");
  }
  if (image) facts.inlineImages++;
  if (depth >= MAX_DEPTH) return false;
  for (const field of NESTED_FIELDS) if (visitContent(part[field], depth + 1, facts)) return true;
  return false;
}

function visitContent(value: unknown, depth: number, facts: ContentFacts): boolean {
  if (Array.isArray(value)) {
    for (const item of value) if (isObject(item) && visitPart(item, depth, facts)) return true;
    return false;
  }
  return isObject(value) && visitPart(value, depth, facts);
}

/** The facts of each body walked, so the unsized check and the image count share one walk. */
const walked = new WeakMap<object, ContentFacts>();

/** Walks the conversation fields of a body once (see the module comment). */
function contentFacts(json: Readonly<Json>): ContentFacts {
  let facts = walked.get(json);
  if (facts) return facts;
  facts = { unsized: false, inlineImages: 0 };
  for (const field of CONTENT_FIELDS) {
    if (conversationIsPlain(json, field)) continue;
    const value = json[field];
    if (typeof value !== "string" && visitContent(value, 0, facts)) break;
  }
  walked.set(json, facts);
  return facts;
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
  return contentFacts(json).unsized;
}

/**
 * The images a body holds inline. Their bytes do not bound their tokens: a provider
 * counts a small or very compressible image as more tokens than it has bytes (Gemini
 * every image at least 258, Gemini 3's media resolutions up to 2,240, OpenAI's tiles
 * upscale a small image), so the reservation adds an allowance for each.
 */
export function inlineImageCount(json: Readonly<Json> | undefined): number {
  return json ? contentFacts(json).inlineImages : 0;
}
