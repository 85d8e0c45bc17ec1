/**
 * The model's events written as an Anthropic Messages stream: `message_start`, then one
 * content block at a time (`content_block_start`, its deltas, `content_block_stop`;
 * a new block stops the open one), then `message_delta` (stop reason, stop sequence and
 * every usage count) and `message_stop` when the stream ends, since usage may follow the
 * finish (Chat sends it last).
 *
 * Parallel tool calls: each call is its own `tool_use` block, opened when the call
 * starts. When an upstream interleaves calls, an argument delta of a call whose block
 * is no longer the open one is still sent with that call's own block index, never into
 * the open block: the Anthropic SDK's accumulator addresses deltas by index, so each
 * call's input assembles apart (the tests check `finalMessage()`), and streams whose
 * calls come one after the other keep Anthropic's own one-block-at-a-time shape.
 */
import type { HttpError } from "../../../../core/errors.ts";
import { anthropic } from "../../../anthropic/index.ts";
import type { JsonObject } from "../../../json.ts";
import type { Usage } from "../../../usage.ts";
import { ZERO_USAGE } from "../../../usage.ts";
import type { StreamWriter } from "../../codec.ts";
import type { IrEvent, IrFinish } from "../../ir.ts";
import { errorEventText, namedEvent } from "../../sse-write.ts";
import { anthropicUsageObject } from "../../usage.ts";
import { stopReasonOf } from "./answer.ts";
import { ownSignature } from "./blocks.ts";

type BlockKind = "text" | "thinking" | "tool_use";

const event = (data: JsonObject) => namedEvent(String(data.type), data);

export function anthropicStreamWriter(): StreamWriter {
  let started = false;
  let done = false;
  let next = 0;
  let open: { kind: BlockKind; index: number } | undefined;
  /** The model's call ordinal → the block index of its `tool_use`. */
  const blockOfCall = new Map<number, number>();
  let usage: Usage | undefined;
  let finish: { finish: IrFinish; stopSequence?: string } | undefined;

  /**
   * `message_start` with the usage known up front (an Anthropic upstream's input
   * counts); zeros when the upstream tells usage only at the end: `message_delta`
   * restates every count, and the SDK and the router's tap take its values over these.
   */
  function start(out: string[], id: string, model: string, known: Usage | undefined): void {
    started = true;
    out.push(event({
      type: "message_start",
      message: { id, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: known ? anthropicUsageObject(known) : { input_tokens: 0, output_tokens: 0 } },
    }));
  }

  function close(out: string[]): void {
    if (open === undefined) return;
    out.push(event({ type: "content_block_stop", index: open.index }));
    open = undefined;
  }

  function openBlock(out: string[], kind: BlockKind, block: JsonObject): number {
    close(out);
    const index = next++;
    open = { kind, index };
    out.push(event({ type: "content_block_start", index, content_block: block }));
    return index;
  }

  const delta = (out: string[], index: number, d: JsonObject) => out.push(event({ type: "content_block_delta", index, delta: d }));

  function text(out: string[], value: string): void {
    if (open?.kind !== "text") {
      if (value === "") return;
      openBlock(out, "text", { type: "text", text: "" });
    }
    if (value !== "") delta(out, open!.index, { type: "text_delta", text: value });
  }

  /** A thinking event opens a thinking block even when empty: a block whose text is omitted still carries its signature. */
  function thinking(out: string[], value: string): void {
    if (open?.kind !== "thinking") openBlock(out, "thinking", { type: "thinking", thinking: "", signature: "" });
    if (value !== "") delta(out, open!.index, { type: "thinking_delta", thinking: value });
  }

  function one(out: string[], e: IrEvent): void {
    if (e.type === "start") {
      if (!started) start(out, e.id, e.model, e.usage);
      return;
    }
    if (!started) start(out, "", "", undefined);
    switch (e.type) {
      case "text": return text(out, e.text);
      case "thinking": return thinking(out, e.text);
      case "thinking_signature": {
        // Another wire's signature means nothing to an Anthropic client's next request.
        const signature = ownSignature(e.signature);
        if (signature !== undefined && open?.kind === "thinking") delta(out, open.index, { type: "signature_delta", signature });
        return;
      }
      case "redacted_thinking": {
        const data = ownSignature(e.signature);
        if (data === undefined) return;
        openBlock(out, "thinking", { type: "redacted_thinking", data });
        close(out);
        return;
      }
      case "tool_call_start":
        blockOfCall.set(e.call, openBlock(out, "tool_use", { type: "tool_use", id: e.id, name: e.name, input: {} }));
        return;
      case "tool_call_arguments": {
        const index = blockOfCall.get(e.call);
        if (index !== undefined && e.delta !== "") delta(out, index, { type: "input_json_delta", partial_json: e.delta });
        return;
      }
      case "usage":
        usage = e.usage;
        return;
      case "finish":
        finish = e.stopSequence === undefined ? { finish: e.finish } : { finish: e.finish, stopSequence: e.stopSequence };
        close(out);
        return;
      case "error":
        out.push(fail(e.error));
        return;
    }
  }

  function fail(error: HttpError): string {
    if (done) return "";
    done = true;
    return errorEventText(anthropic, error);
  }

  return {
    write(events: IrEvent[]): string {
      const out: string[] = [];
      for (const e of events) {
        if (done) break;
        one(out, e);
      }
      return out.join("");
    },
    end(): string {
      if (done) return "";
      const out: string[] = [];
      if (!started) start(out, "", "", undefined);
      close(out);
      done = true;
      const stopReason = stopReasonOf(finish?.finish ?? "stop");
      const stopSequence = finish?.finish === "stop_sequence" ? (finish.stopSequence ?? null) : null;
      out.push(event({ type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: stopSequence }, usage: anthropicUsageObject(usage ?? ZERO_USAGE) }));
      out.push(event({ type: "message_stop" }));
      return out.join("");
    },
    fail,
  };
}
