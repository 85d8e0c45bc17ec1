/**
 * A conversation with nothing left to send. OpenAI takes a user message whose content is
 * "" (or a system message alone); Anthropic refuses a request with no message ("at least
 * one message is required") and Gemini one with no content, and both refuse empty text,
 * which their writers leave out. When nothing is left, the writer refuses the call itself,
 * before anything is sent, naming the client's list of messages.
 */
import { badRequest, type HttpError } from "../../core/errors.ts";
import type { IrRequest } from "./ir.ts";

/** The client's name for its list of messages (`messages`, `input`, `contents`), from the first message's path. */
const listParam = (request: IrRequest): string => request.messages[0]?.param.replace(/\[\d+\]$/, "") ?? "messages";

export const emptyConversation = (request: IrRequest, upstream: string): HttpError =>
  badRequest(`${listParam(request)}: the conversation has no content to send (empty texts are left out), and ${upstream} needs at least one message`, listParam(request));
