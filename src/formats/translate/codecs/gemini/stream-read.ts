/**
 * An upstream Gemini stream (`streamGenerateContent?alt=sse`) read into the shared
 * model. Every event is a whole GenerateContentResponse holding the new parts: text and
 * thoughts become deltas, each function call (Gemini sends its arguments whole) a
 * `tool_call_start` and one `tool_call_arguments`; `usageMetadata` is cumulative and
 * becomes a `usage` event each time; `finishReason` the finish. Events that are not JSON
 * objects are skipped; an `error` object ends the stream with an error.
 */
import { isObject, parseObject } from "../../../json.ts";
import { geminiUsage } from "../../../gemini/usage.ts";
import type { SseEvent } from "../../../sse.ts";
import type { StreamReader } from "../../codec.ts";
import { streamedError } from "../../errors.ts";
import type { IrEvent, IrFinish } from "../../ir.ts";
import { irFinishOf } from "./finish.ts";
import { answerIdOf, callId, candidateParts, firstCandidate, modelOf, promptBlocked } from "./parts-read.ts";

export function geminiStreamReader(): StreamReader {
  let id: string | undefined;
  let calls = 0;
  let finished = false;
  let failed = false;

  function start(chunk: unknown, out: IrEvent[]): string {
    const answerId = answerIdOf(chunk);
    id = answerId;
    out.push({ type: "start", id: answerId, model: modelOf(chunk) });
    return answerId;
  }

  function parts(chunk: unknown, answerId: string, out: IrEvent[]): void {
    for (const part of candidateParts(chunk)) {
      if (part.type === "text") {
        if (part.text !== "") out.push({ type: "text", text: part.text });
      } else if (part.type === "thinking") {
        if (part.text !== "") out.push({ type: "thinking", text: part.text });
        if (part.signature !== undefined) out.push({ type: "thinking_signature", signature: part.signature });
      } else {
        const call = calls++;
        const signature = part.gemini.signature === undefined ? undefined : { wire: "gemini-generate" as const, value: part.gemini.signature };
        out.push({ type: "tool_call_start", call, id: callId(part, answerId, call), name: part.name, ...(signature && { signature }) });
        out.push({ type: "tool_call_arguments", call, delta: part.args });
      }
    }
  }

  function finish(finish: IrFinish, out: IrEvent[]): void {
    finished = true;
    out.push({ type: "finish", finish });
  }

  return {
    push(event: SseEvent): IrEvent[] {
      if (failed) return [];
      const chunk = parseObject(event.data);
      if (chunk === undefined) return [];
      // Usage that follows the finish (an upstream that counts last) still counts.
      if (finished) return isObject(chunk.usageMetadata) ? [{ type: "usage", usage: geminiUsage(chunk.usageMetadata) }] : [];
      if (isObject(chunk.error)) {
        failed = true;
        return [{ type: "error", error: streamedError(chunk) }];
      }
      const out: IrEvent[] = [];
      parts(chunk, id ?? start(chunk, out), out);
      if (isObject(chunk.usageMetadata)) out.push({ type: "usage", usage: geminiUsage(chunk.usageMetadata) });
      const reason = firstCandidate(chunk)?.finishReason;
      if (promptBlocked(chunk)) finish("content_filter", out);
      else if (typeof reason === "string") finish(irFinishOf(reason, calls > 0), out);
      return out;
    },
    /** A stream cut before its finishReason ends as the answer so far (a stop, or the calls made). */
    end(): IrEvent[] {
      if (finished || failed) return [];
      const out: IrEvent[] = [];
      if (id === undefined) start({}, out);
      finish(calls > 0 ? "tool_calls" : "stop", out);
      return out;
    },
  };
}
