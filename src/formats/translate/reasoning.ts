/**
 * One table between reasoning efforts and thinking budgets, for every pair of formats
 * where one side speaks in levels (Chat, Responses, Gemini 3) and the other in tokens
 * (Anthropic, Gemini 2.5).
 */
import type { Effort } from "./ir.ts";

/** Anthropic's smallest thinking budget. */
export const MIN_BUDGET = 1024;

/** Budgets for efforts that ask for thinking (`none` and `minimal` ask for none). */
const BUDGET_OF_EFFORT: Partial<Record<Effort, number>> = { low: 2048, medium: 8192, high: 16384, xhigh: 32768, max: 32768 };

/** The thinking budget an effort asks for; undefined for `none` and `minimal`. */
export const budgetOfEffort = (effort: Effort): number | undefined => BUDGET_OF_EFFORT[effort];

/** The effort a budget reads as: under 4096 tokens low, under 16384 medium, else high; 0 is none. */
export function effortOfBudget(budget: number): Effort {
  if (budget === 0) return "none";
  if (budget < 0) return "medium";
  return budget < 4096 ? "low" : budget < 16384 ? "medium" : "high";
}
