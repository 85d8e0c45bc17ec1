import type { OutputAsked } from "../format.ts";

/** A positive finite number (a string of one too), else undefined. */
function positive(value: unknown): number | undefined {
  const n = typeof value === "string" ? Number(value) : value;
  return typeof n === "number" && Number.isFinite(n) && n > 0 ? n : undefined;
}

const isSettings = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * What a generateContent call asks of its output, from Gemini's own settings only (a
 * `max_tokens` Google would refuse, or a translator ignore, bounds nothing).
 *
 * Answers: `candidateCount`, or `generation_config.candidate_count`: Google's JSON parser
 * takes a field's proto name as well as its camelCase one, so the larger counts.
 * Limit: `generationConfig.maxOutputTokens`, as the translators read it; settings also
 * given as `generation_config`, which Google reads and a translator does not (it would
 * then send no limit to a Responses or Gemini upstream), leave it to the model's.
 */
export function geminiOutputAsked(json: Record<string, unknown> | undefined): OutputAsked {
  let answers = 1;
  for (const settings of [json?.generationConfig, json?.generation_config]) {
    if (isSettings(settings)) answers = Math.max(answers, positive(settings.candidateCount) ?? positive(settings.candidate_count) ?? 1);
  }
  const snake = json?.generation_config !== undefined && json.generation_config !== null;
  const camel = json?.generationConfig;
  const limit = snake || !isSettings(camel) ? undefined : positive(camel.maxOutputTokens);
  return { limit: limit === undefined ? undefined : Math.ceil(limit), answers };
}
