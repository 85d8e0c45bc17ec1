/**
 * A Responses stream read into the shared model's events, one upstream event at a time.
 * Function calls are numbered in the order their items appear and their argument deltas
 * are routed by `item_id`, so interleaved calls never mix. Unknown events are skipped.
 */
import { HttpError, type ErrorKind } from "../../../../core/errors.ts";
import { isObject, parseObject, type JsonObject } from "../../../json.ts";
import { openaiUsage } from "../../../openai/usage.ts";
import type { SseEvent } from "../../../sse.ts";
import type { StreamReader } from "../../codec.ts";
import { streamedError } from "../../errors.ts";
import type { IrEvent } from "../../ir.ts";
import { finishOfStatus, str } from "./names.ts";
import { outputParts } from "./answer-read.ts";
import { reasoningPart } from "./reasoning-item.ts";

interface CallState {
  ordinal: number;
  /** The arguments received so far, to send only what a `done` event adds (servers that send no deltas). */
  args: string;
}

export function responsesStreamReader(): StreamReader {
  let started = false;
  let finished = false;
  /** Function calls by item id and by output index (an event may lack either). */
  const calls = new Map<string, CallState>();
  let callCount = 0;
  /** Items (by id and by index) whose text or thinking arrived as deltas: their `done` adds nothing. */
  const streamed = new Set<string>();
  const callOf = (keys: string[]) => keys.map((k) => calls.get(k)).find((c) => c !== undefined);
  const wasStreamed = (keys: string[]) => keys.some((k) => streamed.has(k));

  const start = (response: JsonObject, out: IrEvent[]) => {
    started = true;
    const event: IrEvent = { type: "start", id: str(response.id), model: str(response.model) };
    const usage = isObject(response.usage) ? openaiUsage(response.usage) : undefined;
    if (usage) event.usage = usage;
    out.push(event);
  };
  /** Content before any `response.created` (a server that skips it) still starts the stream. */
  const ensureStarted = (out: IrEvent[]) => {
    if (!started) start({}, out);
  };

  function callStart(item: JsonObject, outputIndex: unknown, out: IrEvent[]): CallState {
    const call: CallState = { ordinal: callCount++, args: "" };
    for (const key of itemKeys(item.id, outputIndex)) calls.set(key, call);
    out.push({ type: "tool_call_start", call: call.ordinal, id: str(item.call_id), name: str(item.name) });
    return call;
  }

  function callArguments(call: CallState, delta: string, out: IrEvent[]): void {
    if (delta === "") return;
    call.args += delta;
    out.push({ type: "tool_call_arguments", call: call.ordinal, delta });
  }

  /** A `done` carrying the whole arguments: what the deltas did not already bring. */
  function callDone(call: CallState, args: unknown, out: IrEvent[]): void {
    if (typeof args === "string" && args.startsWith(call.args)) callArguments(call, args.slice(call.args.length), out);
  }

  function itemAdded(e: JsonObject, out: IrEvent[]): void {
    const item = isObject(e.item) ? e.item : {};
    if (item.type !== "function_call") return;
    const call = callStart(item, e.output_index, out);
    if (typeof item.arguments === "string") callArguments(call, item.arguments, out);
  }

  /** A finished item: a reasoning item's encrypted content, or what a server that sent no deltas put only here. */
  function itemDone(e: JsonObject, out: IrEvent[]): void {
    const item = isObject(e.item) ? e.item : {};
    const keys = itemKeys(item.id, e.output_index);
    if (item.type === "function_call") {
      callDone(callOf(keys) ?? callStart(item, e.output_index, out), item.arguments, out);
      return;
    }
    if (item.type === "reasoning") return reasoningDone(item, keys, out);
    if (item.type === "message" && !wasStreamed(keys)) {
      for (const part of outputParts(item)) if (part.type === "text") out.push({ type: "text", text: part.text });
    }
  }

  function reasoningDone(item: JsonObject, keys: string[], out: IrEvent[]): void {
    const part = reasoningPart(item);
    if (part === undefined) return;
    if (part.type === "redacted_thinking") {
      out.push({ type: "redacted_thinking", signature: part.signature });
      return;
    }
    if (part.type !== "thinking") return;
    if (!wasStreamed(keys)) out.push({ type: "thinking", text: part.text });
    if (part.signature) out.push({ type: "thinking_signature", signature: part.signature });
  }

  function text(e: JsonObject, kind: "text" | "thinking", out: IrEvent[]): void {
    if (typeof e.delta !== "string" || e.delta === "") return;
    for (const key of itemKeys(e.item_id, e.output_index)) streamed.add(key);
    out.push({ type: kind, text: e.delta });
  }

  /** A second summary part of one reasoning item is a new paragraph of the same thinking. */
  function summaryPartAdded(e: JsonObject, out: IrEvent[]): void {
    if (typeof e.summary_index === "number" && e.summary_index > 0 && wasStreamed(itemKeys(e.item_id, e.output_index))) out.push({ type: "thinking", text: "\n\n" });
  }

  function ended(e: JsonObject, out: IrEvent[]): void {
    const response = isObject(e.response) ? e.response : {};
    const usage = isObject(response.usage) ? openaiUsage(response.usage) : undefined;
    if (usage) out.push({ type: "usage", usage });
    const reason = isObject(response.incomplete_details) ? response.incomplete_details.reason : undefined;
    // The event's name says how it ended even when its response omits the status.
    const status = e.type === "response.incomplete" ? "incomplete" : "completed";
    out.push({ type: "finish", finish: finishOfStatus(status, reason, callCount > 0) });
    finished = true;
  }

  function failed(error: HttpError, out: IrEvent[]): void {
    out.push({ type: "error", error });
    finished = true;
  }

  function onEvent(e: JsonObject, out: IrEvent[]): void {
    switch (e.type) {
      case "response.created":
        if (!started) start(isObject(e.response) ? e.response : {}, out);
        return;
      case "response.output_item.added":
        return itemAdded(e, out);
      case "response.function_call_arguments.delta": {
        const call = callOf(itemKeys(e.item_id, e.output_index));
        if (call && typeof e.delta === "string") callArguments(call, e.delta, out);
        return;
      }
      case "response.function_call_arguments.done": {
        const call = callOf(itemKeys(e.item_id, e.output_index));
        if (call) callDone(call, e.arguments, out);
        return;
      }
      case "response.output_text.delta":
      case "response.refusal.delta":
        return text(e, "text", out);
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta":
        return text(e, "thinking", out);
      case "response.reasoning_summary_part.added":
        return summaryPartAdded(e, out);
      case "response.output_item.done":
        return itemDone(e, out);
      case "response.completed":
      case "response.incomplete":
        return ended(e, out);
      case "response.failed":
        return failed(failedError(e.response), out);
      case "error":
        return failed(errorEventError(e), out);
    }
  }

  return {
    push(event: SseEvent): IrEvent[] {
      if (finished) return [];
      const data = parseObject(event.data);
      if (data === undefined) return [];
      const out: IrEvent[] = [];
      if (data.type !== "response.created" && data.type !== "error" && data.type !== "response.failed") ensureStarted(out);
      onEvent(data, out);
      return out;
    },
    end(): IrEvent[] {
      // A stream cut before its end: the finish it never sent, as the content so far implies.
      if (finished || !started) return [];
      finished = true;
      return [{ type: "finish", finish: callCount > 0 ? "tool_calls" : "stop" }];
    },
  };
}


/** The keys an output item is known by: its id and its output index (`#2`), whichever the event carries. */
function itemKeys(itemId: unknown, outputIndex: unknown): string[] {
  const keys: string[] = [];
  if (typeof itemId === "string" && itemId !== "") keys.push(itemId);
  if (typeof outputIndex === "number") keys.push(`#${outputIndex}`);
  return keys;
}

/** `response.error.code` values read as the kind of failure they name. */
const KIND_OF_CODE: Record<string, ErrorKind> = { rate_limit_exceeded: "rate_limit", server_error: "upstream", invalid_prompt: "invalid_request" };

/** An error a Responses stream names by its code: a code the table knows decides the kind, else it is read as an error type would be. */
function codedError(code: unknown, message: unknown, param: unknown): HttpError {
  const kind = typeof code === "string" ? KIND_OF_CODE[code] : undefined;
  if (kind === undefined) return streamedError({ error: { type: code, code, message, param } });
  return new HttpError(kind, typeof message === "string" && message !== "" ? message : "The upstream response failed", {
    code: code as string,
    param: typeof param === "string" ? param : undefined,
  });
}

/** A `response.failed` event's `response.error {code, message}`. */
function failedError(response: unknown): HttpError {
  const error = isObject(response) && isObject(response.error) ? response.error : {};
  const message = typeof error.message === "string" && error.message !== "" ? error.message : "The upstream response failed";
  return codedError(error.code ?? "server_error", message, undefined);
}

/** An `error` event: `{code, message, param}` at its top level, or an OpenAI error envelope. */
const errorEventError = (e: JsonObject): HttpError => (isObject(e.error) ? streamedError(e) : codedError(e.code, e.message, e.param));
