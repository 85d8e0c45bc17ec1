/**
 * A mock upstream that plays one agent turn in any of the four wire formats: asked with
 * no tool result in the conversation, it streams one tool call (its arguments in two
 * fragments); asked again with the tool's result, it streams a text answer quoting the
 * result. So a real agent CLI pointed at the router runs its tool and finishes, and the
 * test reads the CLI's final answer and what the upstream received.
 *
 * The answers are format-answers.ts's, written independently of the router's translators.
 */
import type { KeyFormat } from "../../src/wire/constants.ts";
import { cannedAnswer, cannedStream } from "./format-answers.ts";
import { json, startMockUpstream, type MockUpstream, type RecordedRequest } from "./mock-upstream.ts";

export interface AgentScript {
  /** The tool the upstream asks for, and its arguments. */
  tool: string;
  args: Record<string, unknown>;
  /** The final answer, given the tool result's text. */
  answer(toolResult: string): string;
}

export interface AgentUpstream {
  readonly mock: MockUpstream;
  readonly url: string;
  /** The model calls received (token counts and other calls excluded; side calls without a stream included). */
  calls(): RecordedRequest[];
  /** The text of the tool result the last call carried, if any. */
  lastToolResult(): string | undefined;
  stop(): Promise<void>;
}

/** The tool result text in a request of the given format, when its last turn carries one. */
export function toolResultOf(format: KeyFormat, body: any): string | undefined {
  switch (format) {
    case "openai": {
      const last = body.messages?.at(-1);
      if (last?.role !== "tool") return undefined;
      return typeof last.content === "string" ? last.content : (last.content ?? []).map((p: any) => p.text ?? "").join("");
    }
    case "responses": {
      const outputs = (body.input ?? []).filter((i: any) => i.type === "function_call_output");
      const last = outputs.at(-1);
      if (!last || body.input.at(-1) !== last) return undefined;
      return typeof last.output === "string" ? last.output : (last.output ?? []).map((p: any) => p.text ?? "").join("");
    }
    case "anthropic": {
      const last = body.messages?.at(-1);
      if (last?.role !== "user" || !Array.isArray(last.content)) return undefined;
      const result = last.content.find((b: any) => b.type === "tool_result");
      if (!result) return undefined;
      return typeof result.content === "string" ? result.content : (result.content ?? []).map((b: any) => b.text ?? "").join("");
    }
    case "gemini": {
      const last = body.contents?.at(-1);
      const part = last?.parts?.find((p: any) => p.functionResponse);
      return part ? JSON.stringify(part.functionResponse.response) : undefined;
    }
  }
}

const isStreamCall = (format: KeyFormat, request: RecordedRequest) => (format === "gemini" ? request.path.endsWith(":streamGenerateContent") : request.json?.stream === true);

/** Whether a recorded request is a model call of the format (not a token count or model list). */
function isModelCall(format: KeyFormat, request: RecordedRequest): boolean {
  switch (format) {
    case "openai": return request.path === "/v1/chat/completions";
    case "responses": return request.path === "/v1/responses";
    case "anthropic": return request.path === "/v1/messages";
    case "gemini": return /:(stream)?[gG]enerateContent$/.test(request.path);
  }
}

export function startAgentUpstream(format: KeyFormat, script: AgentScript): AgentUpstream {
  const mock = startMockUpstream();
  let lastResult: string | undefined;
  mock.route("POST", /.*/, (request) => {
    if (format === "anthropic" && request.path === "/v1/messages/count_tokens") return json({ input_tokens: 100 });
    if (format === "gemini" && request.path.endsWith(":countTokens")) return json({ totalTokens: 100 });
    if (!isModelCall(format, request)) return json({ error: { message: `mock: no such path ${request.path}` } }, 404);
    const model = String(request.json?.model ?? /models\/([^:]+)/.exec(request.path)?.[1] ?? "model");
    // Agent CLIs make side calls without a stream (titles, summaries): a short answer.
    if (!isStreamCall(format, request)) return cannedAnswer(format, model, "Side answer");
    const result = toolResultOf(format, request.json);
    lastResult = result;
    if (result !== undefined) return cannedStream(format, { model, text: script.answer(result) });
    return cannedStream(format, { model, calls: [{ id: "call_agent_1", name: script.tool, args: script.args }] });
  });
  return {
    mock,
    url: mock.url,
    calls: () => mock.requests.filter((r) => isModelCall(format, r)),
    lastToolResult: () => lastResult,
    stop: () => mock.stop(),
  };
}
