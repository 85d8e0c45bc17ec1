/** Errors in OpenAI's envelope, both ways. */
import type { HttpError } from "../../../../core/errors.ts";
import { isObject } from "../../../json.ts";
import { openai } from "../../../openai/index.ts";
import { upstreamError } from "../../errors.ts";

/** Anthropic's 529 "overloaded" is not a status OpenAI's SDKs know: it is sent as 503. */
const chatStatus = (status: number) => (status === 529 ? 503 : status);

export function writeChatError(error: HttpError): { status: number; body: unknown } {
  return { status: chatStatus(error.status), body: openai.errorBody(error) };
}

/** An upstream's error answer (OpenAI's envelope, or anything else: the status decides). */
export function readChatError(status: number, body: unknown): HttpError {
  return upstreamError(status, isObject(body) ? body : {});
}
