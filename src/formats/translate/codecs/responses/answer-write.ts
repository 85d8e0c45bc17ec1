/** The shared model's answer written as a Responses `response` object. */
import type { JsonObject } from "../../../json.ts";
import type { IrAnswer, IrPart } from "../../ir.ts";
import type { AnswerContext } from "../../translator.ts";
import { idBase, itemId, statusOfFinish } from "./names.ts";
import { namespacesOf } from "./namespaces.ts";
import { functionCallItem, messageItem, outputText, reasoningItem, responseObject } from "./response-object.ts";
import { createdSeconds } from "../../sse-write.ts";

export function writeResponsesAnswer(answer: IrAnswer, context: AnswerContext): JsonObject {
  const base = idBase(answer.id);
  const { status, incomplete_details } = statusOfFinish(answer.finish);
  return responseObject({
    id: `resp_${base}`,
    createdAt: createdSeconds(context),
    model: answer.model,
    status,
    output: markCutShort(outputItems(answer.parts, base, namespacesOf(context.clientRequest)), status),
    incompleteReason: incomplete_details?.reason,
    usage: answer.usage,
  });
}

/**
 * Parts as output items in order: each reasoning part its own reasoning item, each run
 * of text one message (its texts joined as one `output_text`), each call its own item.
 */
function outputItems(parts: IrPart[], base: string, namespaces: ReadonlySet<string>): JsonObject[] {
  const items: JsonObject[] = [];
  let text: string[] | undefined;
  for (const part of parts) {
    if (part.type === "text") {
      if (text === undefined) {
        text = [];
        items.push(messageItem(itemId("msg", base, items.length), "completed", []));
      }
      text.push(part.text);
      (items.at(-1)!.content as JsonObject[])[0] = outputText(text.join(""));
      continue;
    }
    text = undefined;
    const item = otherItem(part, base, items.length, namespaces);
    if (item) items.push(item);
  }
  return items;
}

/** An answer cut short (by its bound or a filter) leaves its last message or call incomplete, as the Responses API marks it. */
function markCutShort(items: JsonObject[], status: string): JsonObject[] {
  const last = items.at(-1);
  if (status === "incomplete" && last !== undefined && "status" in last) last.status = "incomplete";
  return items;
}

function otherItem(part: IrPart, base: string, index: number, namespaces: ReadonlySet<string>): JsonObject | undefined {
  switch (part.type) {
    case "thinking":
      return reasoningItem(itemId("rs", base, index), part.text === "" ? [] : [part.text], part.signature?.wire === "openai-responses" ? part.signature.value : undefined);
    case "redacted_thinking":
      // Another format's hidden reasoning is nothing a Responses client can read or send back.
      return part.signature.wire === "openai-responses" ? reasoningItem(itemId("rs", base, index), [], part.signature.value) : undefined;
    case "tool_call":
      return functionCallItem(itemId("fc", base, index), "completed", part.id, part.name, part.arguments, namespaces);
  }
  return undefined;
}
