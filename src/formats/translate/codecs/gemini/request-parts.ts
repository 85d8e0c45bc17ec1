/**
 * The parts of a Gemini client's `contents` read into the shared model: text, thoughts,
 * inline data, file references, function calls and function responses. Gemini answers a
 * call by name and order, and older clients give calls no id, so calls without one get a
 * stable id from their turn and position, and a response without one takes the id of the
 * first unanswered call of that name in the model turn before it.
 */
import { badRequest } from "../../../../core/errors.ts";
import { isObject, type JsonObject } from "../../../json.ts";
import { refusal } from "../../codec.ts";
import type { IrMessage, IrPart, IrSource, IrToolCall } from "../../ir.ts";

/** Part fields the shared model has no place for (they run or describe media in Google's own ways). */
const REFUSED_PART_FIELDS: Record<string, string> = {
  executableCode: "Code for Gemini's code execution",
  codeExecutionResult: "A result of Gemini's code execution",
  videoMetadata: "Video metadata",
  toolCall: "A call of a Gemini server-side tool",
  toolResponse: "A response of a Gemini server-side tool",
};

/** A call of the model turn before, still waiting for its response. */
interface PendingCall {
  id: string;
  name: string;
  answered: boolean;
}

/** Reads the turns in order, matching function responses to the calls before them. */
export class ContentsReader {
  private pending: PendingCall[] = [];

  constructor(private readonly upstream: string) {}

  read(contents: unknown): IrMessage[] {
    if (!Array.isArray(contents)) throw badRequest("contents must be an array", "contents");
    return contents.map((content, i) => this.turn(content, i));
  }

  private turn(content: unknown, i: number): IrMessage {
    const param = `contents[${i}]`;
    if (!isObject(content)) throw badRequest("each content must be an object", param);
    const role = content.role ?? "user";
    // `function` is the role older clients gave turns of function responses.
    if (role !== "user" && role !== "model" && role !== "function") throw badRequest(`unknown role ${JSON.stringify(role)}`, `${param}.role`);
    if (!Array.isArray(content.parts)) throw badRequest("parts must be an array", `${param}.parts`);
    const calls: PendingCall[] = [];
    const parts = content.parts.map((part, j) => this.part(part, `${param}.parts[${j}]`, i, j, calls));
    // The calls of a model turn are the ones the next turn's responses answer.
    if (role === "model") this.pending = calls;
    return { role: role === "model" ? "assistant" : "user", parts, param };
  }

  private part(part: unknown, param: string, turn: number, position: number, calls: PendingCall[]): IrPart {
    if (!isObject(part)) throw badRequest("each part must be an object", param);
    for (const [field, what] of Object.entries(REFUSED_PART_FIELDS)) if (part[field] !== undefined && part[field] !== null) throw refusal(`${param}.${field}`, what, this.upstream);
    if (part.functionCall !== undefined) return this.call(part, param, `call_${turn}_${position}`, calls);
    if (part.functionResponse !== undefined) return this.response(part.functionResponse, `${param}.functionResponse`);
    if (part.inlineData !== undefined) return inlineData(part.inlineData, `${param}.inlineData`, this.upstream);
    if (part.fileData !== undefined) return fileData(part.fileData, `${param}.fileData`, this.upstream);
    if (part.text !== undefined || part.thought === true) return textPart(part, param);
    throw badRequest("a part must have text, inlineData, fileData, functionCall or functionResponse", param);
  }

  private call(part: JsonObject, param: string, madeId: string, calls: PendingCall[]): IrToolCall {
    const fn = part.functionCall;
    if (!isObject(fn) || typeof fn.name !== "string" || fn.name === "") throw badRequest("functionCall must be an object with a name", `${param}.functionCall`);
    if (fn.args !== undefined && fn.args !== null && !isObject(fn.args)) throw badRequest("functionCall.args must be an object", `${param}.functionCall.args`);
    const id = typeof fn.id === "string" && fn.id !== "" ? fn.id : madeId;
    calls.push({ id, name: fn.name, answered: false });
    const call: IrToolCall = { type: "tool_call", id, name: fn.name, arguments: JSON.stringify(fn.args ?? {}) };
    if (typeof part.thoughtSignature === "string" && part.thoughtSignature !== "") call.signature = { wire: "gemini-generate", value: part.thoughtSignature };
    return call;
  }

  private response(fn: unknown, param: string): IrPart {
    if (!isObject(fn) || typeof fn.name !== "string" || fn.name === "") throw badRequest("functionResponse must be an object with a name", param);
    if (fn.response !== undefined && fn.response !== null && !isObject(fn.response)) throw badRequest("functionResponse.response must be an object", `${param}.response`);
    const call = this.answer(fn, param);
    const response = isObject(fn.response) ? fn.response : {};
    const content: IrPart[] = [{ type: "text", text: JSON.stringify(response) }];
    if (Array.isArray(fn.parts)) fn.parts.forEach((p, k) => content.push(responseMedia(p, `${param}.parts[${k}]`, this.upstream)));
    // Gemini's convention: a response with an `error` key and no `output` reports a failure.
    const isError = response.error !== undefined && response.output === undefined;
    return { type: "tool_result", callId: call.id, name: fn.name, content, ...(isError && { isError }) };
  }

  /** The call a response answers: the one with its id, else the first unanswered one of its name. */
  private answer(fn: JsonObject, param: string): PendingCall {
    const byId = typeof fn.id === "string" && fn.id !== "" ? fn.id : undefined;
    const call = byId !== undefined ? this.pending.find((c) => c.id === byId) : this.pending.find((c) => !c.answered && c.name === fn.name);
    if (call === undefined) {
      // A response naming its call by id still says which call it answers.
      if (byId !== undefined) return { id: byId, name: String(fn.name), answered: true };
      throw badRequest(`functionResponse "${String(fn.name)}" answers no functionCall of the model turn before it`, param);
    }
    call.answered = true;
    return call;
  }
}

function textPart(part: JsonObject, param: string): IrPart {
  if (part.text !== undefined && typeof part.text !== "string") throw badRequest("text must be a string", `${param}.text`);
  const text = typeof part.text === "string" ? part.text : "";
  if (part.thought !== true) return { type: "text", text };
  const signature = typeof part.thoughtSignature === "string" && part.thoughtSignature !== "" ? { wire: "gemini-generate" as const, value: part.thoughtSignature } : undefined;
  return { type: "thinking", text, ...(signature && { signature }) };
}

/** `inlineData`: images and PDFs are carried; a text blob (`text/plain`, `text/csv`…) is a text document; other media are refused. */
function inlineData(blob: unknown, param: string, upstream: string): IrPart {
  if (!isObject(blob) || typeof blob.mimeType !== "string" || typeof blob.data !== "string") throw badRequest("inlineData must have a mimeType and base64 data", param);
  const mediaType = blob.mimeType.toLowerCase();
  if (mediaType.startsWith("image/")) return { type: "image", source: { kind: "base64", mediaType, data: blob.data }, param };
  if (mediaType === "application/pdf") return { type: "document", source: { kind: "base64", mediaType, data: blob.data }, param };
  if (mediaType.startsWith("text/")) return { type: "document", source: { kind: "text", text: Buffer.from(blob.data, "base64").toString("utf8") }, param };
  throw refusal(`${param}.mimeType`, `Inline data of type ${JSON.stringify(blob.mimeType)}`, upstream);
}

/**
 * `fileData`: a public http(s) URL of an image or PDF is carried as a URL source. Files
 * held by Google (`gs://` buckets, uploads to the Files API) are refused: another
 * provider cannot fetch them.
 */
function fileData(file: unknown, param: string, upstream: string): IrPart {
  if (!isObject(file) || typeof file.fileUri !== "string") throw badRequest("fileData must have a fileUri", param);
  const url = file.fileUri;
  const mediaType = typeof file.mimeType === "string" ? file.mimeType.toLowerCase() : undefined;
  if (!/^https?:\/\//i.test(url) || /^https:\/\/generativelanguage\.googleapis\.com\//i.test(url)) {
    throw refusal(`${param}.fileUri`, "A file stored at Google", upstream);
  }
  const source: IrSource = { kind: "url", url, ...(mediaType && { mediaType }) };
  if (mediaType?.startsWith("image/")) return { type: "image", source, param };
  if (mediaType === "application/pdf") return { type: "document", source, param };
  throw refusal(`${param}.mimeType`, `A file of type ${JSON.stringify(file.mimeType)}`, upstream);
}

/** Media inside a function response (Gemini 3): images ride in the tool result. */
function responseMedia(part: unknown, param: string, upstream: string): IrPart {
  if (!isObject(part) || part.inlineData === undefined) throw refusal(param, "A function response part other than inline data", upstream);
  const media = inlineData(part.inlineData, `${param}.inlineData`, upstream);
  if (media.type !== "image") throw refusal(`${param}.inlineData.mimeType`, "A function response part other than an image", upstream);
  return media;
}
