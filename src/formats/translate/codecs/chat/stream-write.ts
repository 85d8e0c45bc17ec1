/**
 * The model's events written as a Chat Completions stream: a first chunk with the
 * assistant role, `content` and `reasoning_content` deltas, `tool_calls` deltas with
 * each call's own index (its first with id, type, name and empty arguments), a chunk with
 * `finish_reason`, the usage chunk (`choices: []`) unless the client did not ask for it,
 * and `[DONE]`. A failure is OpenAI's terminal error event, with nothing after it.
 */
import type { HttpError } from "../../../../core/errors.ts";
import type { JsonObject } from "../../../json.ts";
import { openai } from "../../../openai/index.ts";
import { ZERO_USAGE, type Usage } from "../../../usage.ts";
import type { StreamWriter } from "../../codec.ts";
import type { IrEvent } from "../../ir.ts";
import { createdSeconds, dataEvent, DONE, errorEventText } from "../../sse-write.ts";
import type { AnswerContext } from "../../translator.ts";
import { openaiUsageObject } from "../../usage.ts";
import { chatFinishReason } from "./finish.ts";


export function chatStreamWriter(context: AnswerContext): StreamWriter {
  const created = createdSeconds(context);
  const usageChunk = context.usageChunk !== false;
  let id = "";
  let model = "";
  let started = false;
  let finished = false;
  let done = false;
  let usage: Usage | undefined;
  /** The model's call ordinal → Chat's tool-call index, numbered in the order calls start. */
  const indexOf = new Map<number, number>();
  /** Indexes of the calls that have had no argument text yet. */
  const withoutArguments = new Set<number>();

  const chunk = (delta: JsonObject, finishReason: string | null = null) =>
    dataEvent({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] });

  /** The role chunk, once, before anything else (also when a reader's first event is not `start`). */
  function opening(out: string[]): void {
    if (started) return;
    started = true;
    out.push(chunk({ role: "assistant", content: "" }));
  }

  /**
   * The finish chunk. A call that got no argument text (Anthropic streams a call without
   * arguments as one empty delta) gets `{}` first: Chat's arguments are JSON text, OpenAI
   * always gives an object there, and agents parse it.
   */
  function finish(reason: string, out: string[]): void {
    if (finished) return;
    opening(out);
    finished = true;
    for (const index of withoutArguments) out.push(chunk({ tool_calls: [{ index, function: { arguments: "{}" } }] }));
    withoutArguments.clear();
    out.push(chunk({}, reason));
  }

  function fail(error: HttpError): string {
    if (done || finished) {
      done = true;
      return "";
    }
    done = true;
    return errorEventText(openai, error);
  }

  function one(event: IrEvent, out: string[]): void {
    if (event.type === "start") {
      id = event.id;
      model = event.model;
      if (event.usage !== undefined) usage = event.usage;
      opening(out);
      return;
    }
    if (event.type === "usage") {
      usage = event.usage;
      return;
    }
    if (event.type === "error") {
      out.push(fail(event.error));
      return;
    }
    if (finished) return;
    opening(out);
    switch (event.type) {
      case "text":
        if (event.text !== "") out.push(chunk({ content: event.text }));
        return;
      case "thinking":
        if (event.text !== "") out.push(chunk({ reasoning_content: event.text }));
        return;
      case "tool_call_start": {
        const index = indexOf.size;
        indexOf.set(event.call, index);
        withoutArguments.add(index);
        out.push(chunk({ tool_calls: [{ index, id: event.id, type: "function", function: { name: event.name, arguments: "" } }] }));
        return;
      }
      case "tool_call_arguments": {
        const index = indexOf.get(event.call);
        if (index !== undefined && event.delta !== "") {
          withoutArguments.delete(index);
          out.push(chunk({ tool_calls: [{ index, function: { arguments: event.delta } }] }));
        }
        return;
      }
      case "finish":
        finish(chatFinishReason(event.finish), out);
        return;
    }
    // Signatures and redacted thinking have no Chat counterpart.
  }

  return {
    write(events: IrEvent[]): string {
      const out: string[] = [];
      for (const event of events) if (!done) one(event, out);
      return out.join("");
    },
    end(): string {
      if (done) return "";
      const out: string[] = [];
      finish("stop", out);
      done = true;
      if (usageChunk) out.push(dataEvent({ id, object: "chat.completion.chunk", created, model, choices: [], usage: openaiUsageObject(usage ?? ZERO_USAGE) }));
      out.push(DONE);
      return out.join("");
    },
    fail,
  };
}
