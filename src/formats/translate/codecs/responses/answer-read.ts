/** A Responses answer (the `response` object) read into the shared model; odd input gives less, never a throw. */
import { isObject, type JsonObject } from "../../../json.ts";
import { openaiUsageFromJson } from "../../../openai/usage.ts";
import type { IrAnswer, IrPart } from "../../ir.ts";
import { finishOfStatus, str } from "./names.ts";
import { reasoningPart } from "./reasoning-item.ts";

export function readResponsesAnswer(body: unknown): IrAnswer {
  const response = isObject(body) ? body : {};
  const output = Array.isArray(response.output) ? response.output.filter(isObject) : [];
  const parts = output.flatMap(outputParts);
  const called = parts.some((p) => p.type === "tool_call");
  const answer: IrAnswer = {
    id: typeof response.id === "string" ? response.id : "",
    model: typeof response.model === "string" ? response.model : "",
    parts,
    finish: finishOfStatus(response.status, isObject(response.incomplete_details) ? response.incomplete_details.reason : undefined, called),
  };
  // Read by the OpenAI family's own reader: the numbers metering charges.
  const usage = openaiUsageFromJson(response);
  if (usage) answer.usage = usage;
  return answer;
}

/** The model's parts an output item holds; hosted tools' items hold none the model can carry. */
export function outputParts(item: JsonObject): IrPart[] {
  switch (item.type) {
    case "reasoning": {
      const part = reasoningPart(item);
      return part ? [part] : [];
    }
    case "message":
      return Array.isArray(item.content) ? item.content.filter(isObject).flatMap(messageText) : [];
    case "function_call":
      return [{ type: "tool_call", id: str(item.call_id), name: str(item.name), arguments: typeof item.arguments === "string" ? item.arguments : "" }];
  }
  return [];
}


function messageText(part: JsonObject): IrPart[] {
  const text = part.type === "output_text" ? part.text : part.type === "refusal" ? part.refusal : undefined;
  return typeof text === "string" && text !== "" ? [{ type: "text", text }] : [];
}
