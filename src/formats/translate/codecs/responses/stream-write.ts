/**
 * The shared model's events written as a Responses stream, the sequence the OpenAI SDK's
 * `responses.stream()` accumulates: `response.created`, `response.in_progress`, then
 * each output item opened (`output_item.added` and its part), filled by deltas, closed
 * (`…done` events, `output_item.done`), and `response.completed` (or `.incomplete`)
 * with the whole response and its usage; on failure `response.failed` with the error.
 * Every event carries `sequence_number`, counting from 0.
 */
import type { HttpError } from "../../../../core/errors.ts";
import type { JsonObject } from "../../../json.ts";
import type { Usage } from "../../../usage.ts";
import type { StreamWriter } from "../../codec.ts";
import type { IrEvent, IrFinish, Signature } from "../../ir.ts";
import { createdSeconds, namedEvent } from "../../sse-write.ts";
import type { AnswerContext } from "../../translator.ts";
import { idBase, itemId, statusOfFinish } from "./names.ts";
import { functionCallItem, messageItem, outputText, reasoningItem, responseObject, type ResponseState } from "./response-object.ts";
import { namespacesOf } from "./namespaces.ts";

/** The text or reasoning item open now (at most one; function calls are tracked apart, several may be open). */
interface OpenText {
  kind: "message" | "reasoning";
  index: number;
  id: string;
  text: string;
  encrypted?: string;
}

type ItemStatus = "completed" | "incomplete";

interface OpenCall {
  index: number;
  id: string;
  callId: string;
  name: string;
  args: string;
}

/** `response.error.code` for each kind of failure (the SDK types name a closed set). */
const failureCode = (error: HttpError) => (error.kind === "rate_limit" ? "rate_limit_exceeded" : error.kind === "invalid_request" ? "invalid_prompt" : "server_error");

export function responsesStreamWriter(context: AnswerContext): StreamWriter {
  const createdAt = createdSeconds(context);
  const namespaces = namespacesOf(context.clientRequest);
  let sequence = 0;
  let base = "";
  let state: ResponseState | undefined;
  let done = false;
  let open: OpenText | undefined;
  /** Calls by the ordinal the reader gave them; open until another kind of item or the end. */
  const calls = new Map<number, OpenCall>();
  let finish: IrFinish = "stop";
  let usage: Usage | undefined;

  const emit = (out: string[], type: string, fields: JsonObject) => out.push(namedEvent(type, { type, sequence_number: sequence++, ...fields }));
  const snapshot = () => responseObject(state!);

  function start(id: string, model: string, out: string[]): void {
    base = idBase(id);
    state = { id: `resp_${base}`, createdAt, model, status: "in_progress", output: [] };
    emit(out, "response.created", { response: snapshot() });
    emit(out, "response.in_progress", { response: snapshot() });
  }

  /** Events before a start (an upstream that failed at once) still open the response the SDK needs first. */
  const ensureStarted = (out: string[]) => {
    if (!state) start("", "", out);
  };

  function addItem(item: JsonObject, out: string[]): number {
    const index = state!.output.length;
    state!.output.push(item);
    emit(out, "response.output_item.added", { output_index: index, item });
    return index;
  }

  function finishItem(index: number, item: JsonObject, out: string[]): void {
    state!.output[index] = item;
    emit(out, "response.output_item.done", { output_index: index, item });
  }

  function openText(kind: "message" | "reasoning", out: string[]): OpenText {
    if (open?.kind === kind) return open;
    closeAll(out);
    const index = state!.output.length;
    const id = itemId(kind === "message" ? "msg" : "rs", base, index);
    open = { kind, index, id, text: "" };
    if (kind === "message") {
      addItem(messageItem(id, "in_progress", []), out);
      emit(out, "response.content_part.added", { item_id: id, output_index: index, content_index: 0, part: outputText("") });
    } else {
      addItem(reasoningItem(id, [], undefined), out);
      emit(out, "response.reasoning_summary_part.added", { item_id: id, output_index: index, summary_index: 0, part: { type: "summary_text", text: "" } });
    }
    return open;
  }

  function delta(kind: "message" | "reasoning", text: string, out: string[]): void {
    if (text === "") return;
    const item = openText(kind, out);
    item.text += text;
    if (kind === "message") emit(out, "response.output_text.delta", { item_id: item.id, output_index: item.index, content_index: 0, delta: text, logprobs: [] });
    else emit(out, "response.reasoning_summary_text.delta", { item_id: item.id, output_index: item.index, summary_index: 0, delta: text });
  }

  function closeText(item: OpenText, out: string[], status: ItemStatus): void {
    const at = { item_id: item.id, output_index: item.index };
    if (item.kind === "message") {
      emit(out, "response.output_text.done", { ...at, content_index: 0, text: item.text, logprobs: [] });
      emit(out, "response.content_part.done", { ...at, content_index: 0, part: outputText(item.text) });
      finishItem(item.index, messageItem(item.id, status, [outputText(item.text)]), out);
    } else {
      emit(out, "response.reasoning_summary_text.done", { ...at, summary_index: 0, text: item.text });
      emit(out, "response.reasoning_summary_part.done", { ...at, summary_index: 0, part: { type: "summary_text", text: item.text } });
      finishItem(item.index, reasoningItem(item.id, [item.text], item.encrypted), out);
    }
  }

  function closeCall(call: OpenCall, out: string[], status: ItemStatus): void {
    // A call that got no argument text (Anthropic streams a call without arguments as one
    // empty delta) closes with `{}`: the arguments are JSON text that agents parse, and
    // OpenAI always gives an object there.
    if (call.args === "") {
      call.args = "{}";
      emit(out, "response.function_call_arguments.delta", { item_id: call.id, output_index: call.index, delta: call.args });
    }
    emit(out, "response.function_call_arguments.done", { item_id: call.id, output_index: call.index, name: call.name, arguments: call.args });
    finishItem(call.index, functionCallItem(call.id, status, call.callId, call.name, call.args, namespaces), out);
  }

  /**
   * Closes the open text item and every open call, in the order they were opened:
   * completed when another item follows, incomplete when the answer was cut short.
   */
  function closeAll(out: string[], status: ItemStatus = "completed"): void {
    if (open) closeText(open, out, status);
    open = undefined;
    for (const call of calls.values()) closeCall(call, out, status);
    calls.clear();
  }

  /** Hidden reasoning: a Responses client can only send back Responses' own. */
  function redacted(signature: Signature, out: string[]): void {
    if (signature.wire !== "openai-responses") return;
    closeAll(out);
    const index = state!.output.length;
    const item = reasoningItem(itemId("rs", base, index), [], signature.value);
    addItem(item, out);
    finishItem(index, item, out);
  }

  function callStart(e: Extract<IrEvent, { type: "tool_call_start" }>, out: string[]): void {
    if (open) closeText(open, out, "completed");
    open = undefined;
    const index = state!.output.length;
    const call: OpenCall = { index, id: itemId("fc", base, index), callId: e.id, name: e.name, args: "" };
    calls.set(e.call, call);
    addItem(functionCallItem(call.id, "in_progress", call.callId, call.name, "", namespaces), out);
  }

  function callArguments(e: Extract<IrEvent, { type: "tool_call_arguments" }>, out: string[]): void {
    const call = calls.get(e.call);
    if (!call || e.delta === "") return;
    call.args += e.delta;
    emit(out, "response.function_call_arguments.delta", { item_id: call.id, output_index: call.index, delta: e.delta });
  }

  function onEvent(e: IrEvent, out: string[]): void {
    if (e.type === "start") {
      // Usage told up front (Anthropic's input tokens) stands until a later report replaces it.
      if (e.usage) usage = e.usage;
      return state ? undefined : start(e.id, e.model, out);
    }
    ensureStarted(out);
    switch (e.type) {
      case "text":
        return delta("message", e.text, out);
      case "thinking":
        return delta("reasoning", e.text, out);
      case "thinking_signature":
        if (open?.kind === "reasoning" && e.signature.wire === "openai-responses") open.encrypted = e.signature.value;
        return;
      case "redacted_thinking":
        return redacted(e.signature, out);
      case "tool_call_start":
        return callStart(e, out);
      case "tool_call_arguments":
        return callArguments(e, out);
      case "usage":
        usage = e.usage;
        return;
      case "finish":
        finish = e.finish;
        closeAll(out, statusOfFinish(finish).status === "incomplete" ? "incomplete" : "completed");
        return;
      case "error":
        out.push(failed(e.error));
    }
  }

  /** `response.failed` with the output so far (items still open as they stand, marked incomplete). */
  function failed(error: HttpError): string {
    done = true;
    const out: string[] = [];
    ensureStarted(out);
    if (open) state!.output[open.index] = open.kind === "message" ? messageItem(open.id, "incomplete", [outputText(open.text)]) : reasoningItem(open.id, [open.text], open.encrypted);
    for (const call of calls.values()) state!.output[call.index] = functionCallItem(call.id, "incomplete", call.callId, call.name, call.args, namespaces);
    state!.status = "failed";
    state!.error = { code: failureCode(error), message: error.message };
    if (usage) state!.usage = usage;
    emit(out, "response.failed", { response: snapshot() });
    return out.join("");
  }

  return {
    write(events: IrEvent[]): string {
      const out: string[] = [];
      for (const e of events) {
        if (done) break;
        onEvent(e, out);
      }
      return out.join("");
    },
    end(): string {
      if (done) return "";
      done = true;
      const out: string[] = [];
      ensureStarted(out);
      closeAll(out);
      const { status, incomplete_details } = statusOfFinish(finish);
      state!.status = status;
      if (incomplete_details) state!.incompleteReason = incomplete_details.reason;
      if (usage) state!.usage = usage;
      emit(out, status === "completed" ? "response.completed" : "response.incomplete", { response: snapshot() });
      return out.join("");
    },
    fail: (error: HttpError) => (done ? "" : failed(error)),
  };
}
