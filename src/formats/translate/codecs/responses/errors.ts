/** Errors both ways: the OpenAI envelope towards a Responses client, any envelope from a Responses upstream. */
import type { HttpError } from "../../../../core/errors.ts";
import { openai } from "../../../openai/index.ts";
import { upstreamError } from "../../errors.ts";

/** Anthropic's 529 "overloaded" is not a status OpenAI's SDKs know: it reads as 503. */
export function writeResponsesError(error: HttpError): { status: number; body: unknown } {
  return { status: error.status === 529 ? 503 : error.status, body: openai.errorBody(error) };
}

export const readResponsesError = (status: number, body: unknown): HttpError => upstreamError(status, body);
