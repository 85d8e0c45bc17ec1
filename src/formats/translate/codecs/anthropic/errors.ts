/** Errors both ways: an Anthropic upstream's error answers read, the router's errors written in Anthropic's envelope. */
import type { HttpError } from "../../../../core/errors.ts";
import { anthropic } from "../../../anthropic/index.ts";
import { upstreamError } from "../../errors.ts";

/**
 * Anthropic's envelope (`{type:"error", error:{type, message}}`) with the error's own
 * status: an upstream's 503 stays a 503 (Anthropic's SDK retries it as it does 529,
 * which Anthropic keeps for its own overload), a 429 a 429.
 */
export const writeAnthropicError = (error: HttpError): { status: number; body: unknown } => ({ status: error.status, body: anthropic.errorBody(error) });

/** An Anthropic error answer: its status, type and message kept (upstreamError reads every envelope). */
export const readAnthropicError = (status: number, body: unknown): HttpError => upstreamError(status, body);
