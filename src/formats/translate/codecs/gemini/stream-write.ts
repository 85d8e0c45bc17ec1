/**
 * The shared model's stream events written as a Gemini stream (the client's): SSE
 * `data: <GenerateContentResponse>` events with no event names, each carrying the new
 * parts. Text and thoughts go out as they come. Gemini never streams a call's arguments
 * in pieces, so a call is held until its arguments are complete and then sent as one
 * `functionCall` part: complete when a later call has started and its arguments parse,
 * or when anything else starts (text, thoughts, the finish). Calls go out in the order
 * they started. Every chunk carries the usage known so far (Gemini's `usageMetadata` is
 * cumulative); the last chunk carries the `finishReason` and the total usage: it goes out
 * with the upstream event that finished when that event told the usage too, else it waits
 * for the usage that follows (Chat's usage chunk) or for the end of the stream.
 */
import type { HttpError } from "../../../../core/errors.ts";
import { gemini } from "../../../gemini/index.ts";
import { parsesAsJson, type JsonObject } from "../../../json.ts";
import type { Usage } from "../../../usage.ts";
import type { StreamWriter } from "../../codec.ts";
import type { IrEvent, IrFinish, Signature } from "../../ir.ts";
import { geminiUsageObject } from "../../usage.ts";
import { geminiFinishOf } from "./finish.ts";
import { functionCallPart, textPart, thoughtPart } from "./parts-write.ts";
import { errorEventText } from "../../sse-write.ts";


/** One Gemini SSE event (Gemini separates its events with CRLF pairs). */
export const geminiEvent = (data: unknown) => `data: ${JSON.stringify(data)}\r\n\r\n`;

interface HeldCall {
  call: number;
  id: string;
  name: string;
  signature?: Signature;
  arguments: string;
  /** A later part has started, so no more arguments are expected (unless the upstream interleaves). */
  closed: boolean;
}

export function geminiStreamWriter(): StreamWriter {
  let id = "";
  let model = "";
  let usage: Usage | undefined;
  const held: HeldCall[] = [];
  let finish: IrFinish | undefined;
  let done = false;

  function chunk(parts: JsonObject[], finishReason?: string): string {
    const candidate: JsonObject = {};
    if (parts.length > 0 || finishReason === undefined) candidate.content = { role: "model", parts };
    if (finishReason !== undefined) candidate.finishReason = finishReason;
    candidate.index = 0;
    const out: JsonObject = { candidates: [candidate] };
    if (usage !== undefined) out.usageMetadata = geminiUsageObject(usage);
    out.modelVersion = model;
    out.responseId = id;
    return geminiEvent(out);
  }

  /** Sends the held calls, in order, that are complete; all of them when `force`. */
  function release(parts: JsonObject[], force: boolean): void {
    while (held.length > 0 && (force || (held[0]!.closed && parsesAsJson(held[0]!.arguments)))) {
      parts.push(functionCallPart(held.shift()!));
    }
  }

  function closeAll(): void {
    for (const call of held) call.closed = true;
  }

  /**
   * Appends a text or thought delta, joining it to the part this batch has open of the
   * same kind. An empty delta (a block opened before its text) makes no part.
   */
  function delta(parts: JsonObject[], text: string, thought: boolean): void {
    if (text === "") return;
    closeAll();
    release(parts, true);
    const last = parts.at(-1);
    const sameKind = last !== undefined && last.functionCall === undefined && (last.thought === true) === thought && last.thoughtSignature === undefined;
    if (sameKind) last.text = String(last.text) + text;
    else parts.push(thought ? thoughtPart(text) : textPart(text));
  }

  function signature(parts: JsonObject[], value: Signature): void {
    if (value.wire !== "gemini-generate") return;
    const last = parts.at(-1);
    if (last?.thought === true && last.thoughtSignature === undefined) last.thoughtSignature = value.value;
    else parts.push(thoughtPart("", value));
  }

  function apply(event: IrEvent, parts: JsonObject[], out: string[]): void {
    switch (event.type) {
      case "start":
        id = event.id;
        model = event.model;
        if (event.usage !== undefined) usage = event.usage;
        return;
      case "text": return delta(parts, event.text, false);
      case "thinking": return delta(parts, event.text, true);
      case "thinking_signature": return signature(parts, event.signature);
      case "redacted_thinking": return;
      case "tool_call_start":
        closeAll();
        held.push({ call: event.call, id: event.id, name: event.name, arguments: "", closed: false, ...(event.signature && { signature: event.signature }) });
        return release(parts, false);
      case "tool_call_arguments": {
        const call = held.find((c) => c.call === event.call);
        if (call !== undefined) call.arguments += event.delta;
        return release(parts, false);
      }
      case "usage":
        usage = event.usage;
        return;
      case "finish":
        closeAll();
        release(parts, true);
        finish = event.finish;
        return;
      case "error":
        if (parts.length > 0) out.push(chunk(parts.splice(0)));
        out.push(errorEventText(gemini, event.error));
        done = true;
        return;
    }
  }

  /** The last chunk: the parts still to send, the finish and the total usage. */
  function final(parts: JsonObject[], reason: IrFinish): string {
    done = true;
    return chunk(parts, geminiFinishOf(reason));
  }

  return {
    write(events: IrEvent[]): string {
      if (done) return "";
      const out: string[] = [];
      const parts: JsonObject[] = [];
      let usageHere = false;
      for (const event of events) {
        apply(event, parts, out);
        if (done) return out.join("");
        usageHere ||= event.type === "usage";
      }
      // The upstream event that ends the answer tells its usage too (all but Chat, whose usage follows).
      if (finish !== undefined && usageHere) out.push(final(parts, finish));
      else if (parts.length > 0) out.push(chunk(parts));
      return out.join("");
    },
    end(): string {
      if (done) return "";
      const parts: JsonObject[] = [];
      release(parts, true);
      done = true;
      if (finish !== undefined) return final(parts, finish);
      return parts.length > 0 ? chunk(parts) : "";
    },
    fail(error: HttpError): string {
      if (done) return "";
      done = true;
      return errorEventText(gemini, error);
    },
  };
}
