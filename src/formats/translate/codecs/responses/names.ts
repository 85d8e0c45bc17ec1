/** Names and ids the Responses codec's files share. */
import type { Effort, IrFinish } from "../../ir.ts";

export const NAME = "OpenAI Responses";

/** A string member of an upstream event, or "" (readers of answers never throw on odd input). */
export const str = (v: unknown): string => (typeof v === "string" ? v : "");

/** The efforts the Responses API's `reasoning.effort` accepts. */
export const RESPONSES_EFFORTS: readonly Effort[] = ["none", "minimal", "low", "medium", "high", "xhigh"];

/**
 * The part of an upstream answer's id that can ride in Responses ids (`resp_…`, `msg_…`):
 * letters, digits, `_` and `-`; a random one when nothing is left.
 */
export function idBase(upstreamId: string): string {
  const safe = upstreamId.replace(/^resp_/, "").replace(/[^A-Za-z0-9_-]/g, "");
  return safe !== "" ? safe : crypto.randomUUID().replaceAll("-", "");
}

/** Ids of a response's output items, derived from its id and the item's output index so that they are stable. */
export const itemId = (prefix: "rs" | "msg" | "fc", base: string, outputIndex: number) => `${prefix}_${base}_${outputIndex}`;

/** A Responses `status` and `incomplete_details` for how the answer ended. */
export function statusOfFinish(finish: IrFinish): { status: "completed" | "incomplete"; incomplete_details: { reason: string } | null } {
  if (finish === "length") return { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } };
  if (finish === "content_filter") return { status: "incomplete", incomplete_details: { reason: "content_filter" } };
  return { status: "completed", incomplete_details: null };
}

/** How an upstream Responses answer ended, from its status, incomplete reason and whether it called functions. */
export function finishOfStatus(status: unknown, reason: unknown, calledFunctions: boolean): IrFinish {
  if (status === "incomplete") return reason === "content_filter" ? "content_filter" : "length";
  return calledFunctions ? "tool_calls" : "stop";
}

