/**
 * A Gemini generateContent request (the client's) read into the shared model. The model
 * and the stream flag are in the client's path, so they come from the ReadContext.
 * Hints with no counterpart are dropped; what changes the answer's meaning and has none
 * (Google's hosted tools, a cache held at Google, speech) is refused naming the field.
 * docs/translation.md has the table.
 */
import { badRequest } from "../../../../core/errors.ts";
import { isObject, type JsonObject } from "../../../json.ts";
import { refusal, type ReadContext } from "../../codec.ts";
import type { Effort, IrOutputFormat, IrReasoning, IrRequest, IrTool, IrToolChoice } from "../../ir.ts";
import { ContentsReader } from "./request-parts.ts";
import { jsonSchemaOf } from "./schema.ts";

/** Request fields that would change the answer and that the shared model cannot hold. */
const REFUSED_FIELDS: Record<string, string> = {
  cachedContent: "A context cache held at Google",
};

/** Gemini's own tools, run by Google. */
const HOSTED_TOOLS: Record<string, string> = {
  googleSearch: "Google Search grounding",
  googleSearchRetrieval: "Google Search retrieval",
  codeExecution: "Gemini's code execution",
  urlContext: "Gemini's URL context tool",
  fileSearch: "Gemini's file search",
  computerUse: "Gemini's computer use",
  googleMaps: "Google Maps grounding",
  retrieval: "Vertex AI retrieval",
  enterpriseWebSearch: "Enterprise web search",
  mcpServers: "Gemini's remote MCP servers",
};

const EFFORT_OF_LEVEL: Record<string, Effort> = { MINIMAL: "minimal", LOW: "low", MEDIUM: "medium", HIGH: "high" };

export function readGeminiRequest(body: JsonObject, context: ReadContext): IrRequest {
  for (const [field, what] of Object.entries(REFUSED_FIELDS)) if (body[field] !== undefined && body[field] !== null) throw refusal(field, what, context.upstream);
  const request: IrRequest = {
    model: context.model,
    stream: context.stream,
    system: system(body.systemInstruction, context.upstream),
    messages: new ContentsReader(context.upstream).read(body.contents),
    tools: [],
  };
  const { tools, choice } = toolsAndChoice(body, context.upstream);
  request.tools = tools;
  if (choice !== undefined) request.toolChoice = choice;
  if (body.generationConfig !== undefined && body.generationConfig !== null) generation(body.generationConfig, request, context.upstream);
  return request;
}

/** `systemInstruction`: a Content of text parts (or, as some clients send it, a string); one system entry per part. */
function system(instruction: unknown, upstream: string): string[] {
  if (instruction === undefined || instruction === null) return [];
  if (typeof instruction === "string") return [instruction];
  if (!isObject(instruction) || !Array.isArray(instruction.parts)) throw badRequest("systemInstruction must be a Content with parts", "systemInstruction");
  return instruction.parts.map((part, j) => {
    const param = `systemInstruction.parts[${j}]`;
    if (!isObject(part)) throw badRequest("each part must be an object", param);
    if (typeof part.text !== "string") throw refusal(param, "A system instruction part other than text", upstream);
    return part.text;
  });
}

function toolsAndChoice(body: JsonObject, upstream: string): { tools: IrTool[]; choice?: IrToolChoice } {
  let tools = declarations(body.tools, upstream);
  const config = isObject(body.toolConfig) ? body.toolConfig.functionCallingConfig : undefined;
  if (config === undefined || config === null) return { tools };
  const param = "toolConfig.functionCallingConfig";
  if (!isObject(config)) throw badRequest("functionCallingConfig must be an object", param);
  const allowed = allowedNames(config.allowedFunctionNames, `${param}.allowedFunctionNames`);
  // Calls limited to some functions: the others are not offered (same meaning, any format).
  if (allowed !== undefined && config.mode !== "NONE") tools = tools.filter((t) => allowed.includes(t.name));
  switch (config.mode ?? "AUTO") {
    case "AUTO":
    case "VALIDATED":
      return { tools, choice: { type: "auto" } };
    case "NONE":
      return { tools, choice: { type: "none" } };
    case "ANY":
      if (allowed?.length === 1) return { tools, choice: { type: "tool", name: allowed[0]!, param: `${param}.allowedFunctionNames` } };
      return { tools, choice: { type: "required" } };
  }
  throw badRequest(`unknown function calling mode ${JSON.stringify(config.mode)}`, `${param}.mode`);
}

function allowedNames(names: unknown, param: string): string[] | undefined {
  if (names === undefined || names === null) return undefined;
  if (!Array.isArray(names) || !names.every((n) => typeof n === "string")) throw badRequest("allowedFunctionNames must be an array of names", param);
  return names.length === 0 ? undefined : (names as string[]);
}

function declarations(tools: unknown, upstream: string): IrTool[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) throw badRequest("tools must be an array", "tools");
  return tools.flatMap((tool, i) => {
    const param = `tools[${i}]`;
    if (!isObject(tool)) throw badRequest("each tool must be an object", param);
    for (const [field, value] of Object.entries(tool)) {
      if (field === "functionDeclarations" || value === undefined || value === null) continue;
      throw refusal(`${param}.${field}`, HOSTED_TOOLS[field] ?? `The Gemini tool ${JSON.stringify(field)}`, upstream);
    }
    if (tool.functionDeclarations === undefined) return [];
    if (!Array.isArray(tool.functionDeclarations)) throw badRequest("functionDeclarations must be an array", `${param}.functionDeclarations`);
    return tool.functionDeclarations.map((d, j) => declaration(d, `${param}.functionDeclarations[${j}]`));
  });
}

/** A function declaration: `parametersJsonSchema` as given, or `parameters` (Gemini's Schema) as JSON Schema. */
function declaration(d: unknown, param: string): IrTool {
  if (!isObject(d) || typeof d.name !== "string" || d.name === "") throw badRequest("a function declaration must have a name", param);
  const schema = d.parametersJsonSchema ?? (d.parameters === undefined || d.parameters === null ? undefined : jsonSchemaOf(d.parameters));
  if (schema !== undefined && !isObject(schema)) throw badRequest("parameters must be a schema object", `${param}.parameters`);
  const tool: IrTool = { name: d.name, parameters: schema ?? { type: "object", properties: {} }, param };
  if (typeof d.description === "string") tool.description = d.description;
  return tool;
}

/** Reads `generationConfig` into the request. */
function generation(config: unknown, request: IrRequest, upstream: string): void {
  const at = (field: string) => `generationConfig.${field}`;
  if (!isObject(config)) throw badRequest("generationConfig must be an object", "generationConfig");
  const num = (field: string): number | undefined => {
    const value = config[field];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "number" || !Number.isFinite(value)) throw badRequest(`${field} must be a number`, at(field));
    return value;
  };
  const set = <K extends keyof IrRequest>(key: K, value: IrRequest[K] | undefined) => {
    if (value !== undefined) request[key] = value;
  };
  set("temperature", num("temperature"));
  set("topP", num("topP"));
  set("topK", num("topK"));
  set("maxTokens", num("maxOutputTokens"));
  set("seed", num("seed"));
  set("presencePenalty", num("presencePenalty"));
  set("frequencyPenalty", num("frequencyPenalty"));
  const count = num("candidateCount");
  if (count !== undefined && count !== 1) request.candidates = { count, param: at("candidateCount") };
  if (config.stopSequences !== undefined && config.stopSequences !== null) {
    if (!Array.isArray(config.stopSequences) || !config.stopSequences.every((s) => typeof s === "string")) throw badRequest("stopSequences must be an array of strings", at("stopSequences"));
    if (config.stopSequences.length > 0) request.stop = { sequences: config.stopSequences as string[], param: at("stopSequences") };
  }
  if (config.responseLogprobs === true) request.logprobs = { top: num("logprobs") ?? 0, param: at("responseLogprobs") };
  set("output", outputFormat(config, upstream));
  set("reasoning", reasoning(config.thinkingConfig));
  modalities(config.responseModalities, upstream);
  if (config.speechConfig !== undefined && config.speechConfig !== null) throw refusal(at("speechConfig"), "Spoken output", upstream);
}

/** JSON output: `application/json`, with a schema when one is given (`responseJsonSchema` as is, `responseSchema` converted). */
function outputFormat(config: JsonObject, upstream: string): IrOutputFormat | undefined {
  const mime = config.responseMimeType;
  if (mime === undefined || mime === null || mime === "text/plain") return undefined;
  if (mime !== "application/json") throw refusal("generationConfig.responseMimeType", `Output of type ${JSON.stringify(mime)}`, upstream);
  if (config.responseJsonSchema !== undefined && config.responseJsonSchema !== null) {
    if (!isObject(config.responseJsonSchema)) throw badRequest("responseJsonSchema must be a schema object", "generationConfig.responseJsonSchema");
    return { type: "json_schema", schema: config.responseJsonSchema, param: "generationConfig.responseJsonSchema" };
  }
  if (config.responseSchema !== undefined && config.responseSchema !== null) {
    if (!isObject(config.responseSchema)) throw badRequest("responseSchema must be a schema object", "generationConfig.responseSchema");
    return { type: "json_schema", schema: jsonSchemaOf(config.responseSchema) as JsonObject, param: "generationConfig.responseSchema" };
  }
  return { type: "json", param: "generationConfig.responseMimeType" };
}

/** `thinkingConfig`: a budget (Gemini 2.5), a level (Gemini 3), and whether thoughts are shown. */
function reasoning(thinking: unknown): IrReasoning | undefined {
  if (thinking === undefined || thinking === null) return undefined;
  const param = "generationConfig.thinkingConfig";
  if (!isObject(thinking)) throw badRequest("thinkingConfig must be an object", param);
  const out: IrReasoning = {};
  if (thinking.thinkingBudget !== undefined && thinking.thinkingBudget !== null) {
    if (typeof thinking.thinkingBudget !== "number" || !Number.isInteger(thinking.thinkingBudget)) throw badRequest("thinkingBudget must be an integer", `${param}.thinkingBudget`);
    out.budget = thinking.thinkingBudget;
  }
  if (thinking.thinkingLevel !== undefined && thinking.thinkingLevel !== null && thinking.thinkingLevel !== "THINKING_LEVEL_UNSPECIFIED") {
    const effort = EFFORT_OF_LEVEL[String(thinking.thinkingLevel)];
    if (effort === undefined) throw badRequest(`unknown thinking level ${JSON.stringify(thinking.thinkingLevel)}`, `${param}.thinkingLevel`);
    out.effort = effort;
  }
  if (typeof thinking.includeThoughts === "boolean") out.visible = thinking.includeThoughts;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Text is the only output every format gives; images and audio out are refused. */
function modalities(list: unknown, upstream: string): void {
  if (list === undefined || list === null) return;
  const param = "generationConfig.responseModalities";
  if (!Array.isArray(list)) throw badRequest("responseModalities must be an array", param);
  list.forEach((m, k) => {
    if (m !== "TEXT") throw refusal(`${param}[${k}]`, `Output of modality ${JSON.stringify(m)}`, upstream);
  });
}
