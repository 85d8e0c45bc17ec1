/**
 * A Chat Completions stream read into the model's events: the first chunk starts the
 * answer, `content`/`refusal` deltas are text, `reasoning_content`/`reasoning` deltas
 * thinking, each `tool_calls` index is its own call (its first fragment carries the id
 * and name), `finish_reason` finishes, and the usage chunk after it (`choices: []`) is
 * usage. An `{error:{…}}` chunk is the upstream failing. Odd chunks are skipped.
 */
import { isObject, parseObject, type JsonObject } from "../../../json.ts";
import { chunkUsageObject, openaiUsage } from "../../../openai/usage.ts";
import type { SseEvent } from "../../../sse.ts";
import type { StreamReader } from "../../codec.ts";
import { streamedError } from "../../errors.ts";
import type { IrEvent } from "../../ir.ts";
import { madeCallId, reasoningText } from "./answer.ts";
import { irFinish } from "./finish.ts";

export function chatStreamReader(): StreamReader {
  let started = false;
  let finished = false;
  let over = false;
  /** Chat's tool-call index → the call's ordinal and id, so fragments of parallel calls never mix. */
  const calls = new Map<number, { call: number; id: string }>();
  let nextCall = 0;

  function start(chunk: JsonObject, out: IrEvent[]): void {
    started = true;
    out.push({ type: "start", id: typeof chunk.id === "string" ? chunk.id : "", model: typeof chunk.model === "string" ? chunk.model : "" });
  }

  /**
   * A fragment's call: the one its index names, or a new one when the index is new or
   * the fragment brings another id on a used index (servers that send each call whole,
   * all at index 0).
   */
  function toolFragment(fragment: JsonObject, position: number, out: IrEvent[]): void {
    const index = typeof fragment.index === "number" ? fragment.index : position;
    const fn = isObject(fragment.function) ? fragment.function : {};
    const id = typeof fragment.id === "string" && fragment.id !== "" ? fragment.id : undefined;
    let known = calls.get(index);
    if (known === undefined || (id !== undefined && id !== known.id)) {
      const call = nextCall++;
      known = { call, id: id ?? madeCallId() };
      calls.set(index, known);
      out.push({ type: "tool_call_start", call, id: known.id, name: typeof fn.name === "string" ? fn.name : "" });
    }
    if (typeof fn.arguments === "string" && fn.arguments !== "") out.push({ type: "tool_call_arguments", call: known.call, delta: fn.arguments });
  }

  function choiceEvents(choice: JsonObject, out: IrEvent[]): void {
    const delta = isObject(choice.delta) ? choice.delta : {};
    const reasoning = reasoningText(delta);
    if (reasoning !== undefined) out.push({ type: "thinking", text: reasoning });
    for (const text of [delta.content, delta.refusal]) if (typeof text === "string" && text !== "") out.push({ type: "text", text });
    if (Array.isArray(delta.tool_calls)) delta.tool_calls.forEach((fragment, position) => isObject(fragment) && toolFragment(fragment, position, out));
  }

  /** The answer's choice (Chat streams one per `n`; the model holds the first). */
  const firstChoice = (chunk: JsonObject): JsonObject | undefined =>
    Array.isArray(chunk.choices) ? (chunk.choices as unknown[]).find((c): c is JsonObject => isObject(c) && (c.index ?? 0) === 0) : undefined;

  return {
    push(event: SseEvent): IrEvent[] {
      if (over) return [];
      if (event.data === "[DONE]") return [];
      const chunk = parseObject(event.data);
      if (chunk === undefined) return [];
      // OpenAI-compatible servers report a failure inside the stream as an error object.
      if (isObject(chunk.error)) {
        over = true;
        return [{ type: "error", error: streamedError(chunk) }];
      }
      const out: IrEvent[] = [];
      const choice = firstChoice(chunk);
      if (!started) {
        // Azure opens a content-filtered stream with a chunk of its own (empty id and model,
        // no choices, its prompt_filter_results): the answer's identity comes after it.
        if ((typeof chunk.id !== "string" || chunk.id === "") && choice === undefined && !isObject(chunk.usage)) return [];
        start(chunk, out);
      }
      if (choice !== undefined) choiceEvents(choice, out);
      // Usage before the finish it may share a chunk with, so a writer closing on the finish has it.
      const usageObject = chunkUsageObject(chunk);
      const usage = usageObject === undefined ? undefined : openaiUsage(usageObject);
      if (usage !== undefined) out.push({ type: "usage", usage });
      if (choice !== undefined && typeof choice.finish_reason === "string" && !finished) {
        finished = true;
        out.push({ type: "finish", finish: irFinish(choice.finish_reason, nextCall > 0) });
      }
      return out;
    },
    end(): IrEvent[] {
      if (over) return [];
      over = true;
      const out: IrEvent[] = [];
      if (!started) start({}, out);
      // A stream cut before its finish_reason still ends as an answer.
      if (!finished) out.push({ type: "finish", finish: nextCall > 0 ? "tool_calls" : "stop" });
      return out;
    },
  };
}
