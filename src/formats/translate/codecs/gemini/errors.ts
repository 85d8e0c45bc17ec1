/** Errors in Gemini's envelope (`{error:{code, message, status}}`), both ways. */
import type { HttpError } from "../../../../core/errors.ts";
import { gemini } from "../../../gemini/index.ts";
import { upstreamError } from "../../errors.ts";

/** An error for a Gemini client: Google's envelope, with the status Google's SDKs read. */
export const writeGeminiError = (error: HttpError) => ({ status: error.status, body: gemini.errorBody(error) });

/** A Gemini upstream's error answer: its status, message and Google status name (`RESOURCE_EXHAUSTED`…). */
export const readGeminiError = (status: number, body: unknown): HttpError => upstreamError(status, body);
