/**
 * An OpenAI Chat Completions stream as an Anthropic Messages stream: `message_start`,
 * then one content block at a time (`content_block_start`, its deltas,
 * `content_block_stop`), then `message_delta` with the stop reason and usage, and
 * `message_stop`. Usage arrives in Chat's last chunk, after `finish_reason`, so the
 * closing events wait for it (or for `[DONE]`, or the end of the stream).
 */
import type { HttpError } from "../../../core/errors.ts";
import { anthropic } from "../../anthropic/index.ts";
import { isObject, parseObject, type JsonObject } from "../../json.ts";
import { openaiUsage } from "../../openai/usage.ts";
import type { SseEvent } from "../../sse.ts";
import { ZERO_USAGE, type Usage } from "../../usage.ts";
import { streamedError } from "../errors.ts";
import { EMPTY, encodeAll, namedEvent } from "../sse-write.ts";
import { anthropicStopReason } from "../stop-reasons.ts";
import type { StreamTranslator } from "../translator.ts";
import { anthropicUsageObject } from "../usage.ts";
import { reasoningOf } from "./response.ts";

type BlockKind = "thinking" | "text" | "tool";

const event = (data: JsonObject) => namedEvent(String(data.type), data);

export function anthropicStreamFromOpenai(): StreamTranslator {
  let started = false;
  let done = false;
  let next = 0;
  let open: { kind: BlockKind; index: number } | undefined;
  /** Chat's tool-call index → the Anthropic block that carries that call, so no call's deltas reach another's block. */
  const toolBlocks = new Map<number, number>();
  let stopReason: string | undefined;
  let usage: Usage | undefined;

  function start(chunk: JsonObject, out: string[]): void {
    started = true;
    out.push(event({
      type: "message_start",
      // Usage is only known at the end: message_delta restates every count (the SDK and
      // the router's usage tap both take its values over these zeros).
      message: { id: chunk.id, type: "message", role: "assistant", model: chunk.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } },
    }));
  }

  function close(out: string[]): void {
    if (open === undefined) return;
    out.push(event({ type: "content_block_stop", index: open.index }));
    open = undefined;
  }

  /** The open block of this kind, or a new one after closing whatever else was open. */
  function ensure(kind: "thinking" | "text", out: string[]): number {
    if (open?.kind === kind) return open.index;
    close(out);
    const index = next++;
    open = { kind, index };
    const block = kind === "text" ? { type: "text", text: "" } : { type: "thinking", thinking: "", signature: "" };
    out.push(event({ type: "content_block_start", index, content_block: block }));
    return index;
  }

  function toolDelta(call: JsonObject, out: string[]): void {
    const key = typeof call.index === "number" ? call.index : 0;
    const fn = isObject(call.function) ? call.function : {};
    let index = toolBlocks.get(key);
    if (index === undefined) {
      close(out);
      index = next++;
      toolBlocks.set(key, index);
      open = { kind: "tool", index };
      out.push(event({ type: "content_block_start", index, content_block: { type: "tool_use", id: call.id, name: fn.name, input: {} } }));
    }
    // A fragment of an earlier call (an upstream that interleaves calls) still goes to
    // that call's own block, by its index, never into the block now open.
    if (typeof fn.arguments === "string" && fn.arguments !== "") {
      out.push(event({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: fn.arguments } }));
    }
  }

  function finish(out: string[]): Uint8Array {
    if (!started) start({}, out);
    close(out);
    done = true;
    out.push(event({ type: "message_delta", delta: { stop_reason: stopReason ?? "end_turn", stop_sequence: null }, usage: anthropicUsageObject(usage ?? ZERO_USAGE) }));
    out.push(event({ type: "message_stop" }));
    return encodeAll(out);
  }

  function fail(error: HttpError): Uint8Array {
    if (done) return EMPTY;
    done = true;
    return anthropic.streamErrorEvent(error);
  }

  return {
    push(e: SseEvent): Uint8Array {
      if (done) return EMPTY;
      const out: string[] = [];
      if (e.data === "[DONE]") return finish(out);
      const chunk = parseObject(e.data);
      if (chunk === undefined) return EMPTY;
      // OpenAI-compatible servers report a failure inside the stream as an error object.
      if (isObject(chunk.error)) return fail(streamedError(chunk));
      if (!started) start(chunk, out);
      if (isObject(chunk.usage)) usage = openaiUsage(chunk.usage) ?? usage;
      const choice = Array.isArray(chunk.choices) && isObject(chunk.choices[0]) ? chunk.choices[0] : undefined;
      if (choice !== undefined) {
        const delta = isObject(choice.delta) ? choice.delta : {};
        const reasoning = reasoningOf(delta);
        if (reasoning !== undefined) out.push(event({ type: "content_block_delta", index: ensure("thinking", out), delta: { type: "thinking_delta", thinking: reasoning } }));
        for (const text of [delta.content, delta.refusal]) {
          if (typeof text === "string" && text !== "") out.push(event({ type: "content_block_delta", index: ensure("text", out), delta: { type: "text_delta", text } }));
        }
        if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) if (isObject(call)) toolDelta(call, out);
        if (typeof choice.finish_reason === "string") {
          stopReason = anthropicStopReason(choice.finish_reason);
          close(out);
        }
      }
      return encodeAll(out);
    },
    end: () => (done ? EMPTY : finish([])),
    fail,
  };
}
