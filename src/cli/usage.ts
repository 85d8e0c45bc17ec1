/**
 * `router usage live|bill|ranking`: the caller's own usage (`/dashboard/live`,
 * `/dashboard/bill`), a descendant's subtree bill and the ranking of the accounts
 * under the caller (`/x-bill`, managers). Dates are business dates in the server's time zone; the
 * server checks them, the command only refuses combinations that cannot mean anything.
 */
import { UsageError } from "./flags.ts";
import type { BillInfo, LiveUsage, ModelTotals, RankedBill } from "../wire/usage.ts";
import { commandGroup, intFlag, remoteCommand, stringFlag, type Args } from "./client.ts";
import { formatTable, print, printJson } from "./output.ts";

const live = remoteCommand({
  name: "live",
  description: "Your usage today and this month, by model",
  args: {},
  async run({ client, json }) {
    const { body } = await client.request<LiveUsage>("GET", "/dashboard/live");
    if (json) return printJson(body);
    const a = body.account;
    print(`account ${a.id} ${a.email} (${a.name}), balance ${a.balance} credits`);
    const rows: Array<{ period: string; model: string; t: ModelTotals }> = [];
    for (const [period, totals] of [["today", body.daily_usage], ["month", body.monthly_usage]] as const) {
      rows.push({ period, model: "(all)", t: totals });
      for (const [model, t] of Object.entries(totals.ModelUsage)) rows.push({ period, model, t });
    }
    print(
      formatTable(rows, [
        { header: "PERIOD", value: (r) => r.period },
        { header: "MODEL", value: (r) => r.model, max: 40 },
        { header: "REQUESTS", value: (r) => r.t.Requests, align: "right" },
        { header: "PROMPT", value: (r) => r.t.Prompt, align: "right" },
        { header: "COMPLETION", value: (r) => r.t.Completion, align: "right" },
        { header: "REASONING", value: (r) => r.t.Reasoning, align: "right" },
        { header: "CREDIT", value: (r) => r.t.CreditUsed, align: "right" },
      ]),
    );
  },
});

function checkRange(args: Args): void {
  const has = (name: string) => stringFlag(args, name) !== undefined;
  if (has("date") && (has("start") || has("end") || has("days"))) throw new UsageError("--date cannot be combined with --start, --end or --days");
  if (has("days") && (has("start") || has("end"))) throw new UsageError("--days cannot be combined with --start or --end");
  if (has("end") && !has("start")) throw new UsageError("--end needs --start");
  intFlag(args, "days");
}

const RANGE_ARGS = {
  days: { type: "string", description: "The last N business days, today included", valueHint: "n" },
  date: { type: "string", description: "One day", valueHint: "YYYY-MM-DD" },
  start: { type: "string", description: "First day of a range", valueHint: "YYYY-MM-DD" },
  end: { type: "string", description: "Last day of the range (default today)", valueHint: "YYYY-MM-DD" },
} as const;

const rangeQuery = (args: Args) => ({ days: intFlag(args, "days"), date: stringFlag(args, "date"), start: stringFlag(args, "start"), end: stringFlag(args, "end") });

/** A bill as a table per day and one per model, with its totals. */
function printBill(body: BillInfo): void {
  print(
    formatTable(body.daily_costs, [
      { header: "DATE", value: (d) => d.date },
      { header: "REQUESTS", value: (d) => d.total_requests, align: "right" },
      { header: "PROMPT", value: (d) => d.total_prompt, align: "right" },
      { header: "COMPLETION", value: (d) => d.total_completion, align: "right" },
      { header: "CREDIT", value: (d) => d.total_credit_used, align: "right" },
    ]),
  );
  const models = Object.entries(body.usage_summary);
  if (models.length > 0) {
    print("");
    print(
      formatTable(models, [
        { header: "MODEL", value: ([name]) => name, max: 40 },
        { header: "REQUESTS", value: ([, m]) => m.requests, align: "right" },
        { header: "PROMPT", value: ([, m]) => m.prompt, align: "right" },
        { header: "CACHED", value: ([, m]) => m.cached_input, align: "right" },
        { header: "COMPLETION", value: ([, m]) => m.completion, align: "right" },
        { header: "REASONING", value: ([, m]) => m.reasoning, align: "right" },
        { header: "COST", value: ([, m]) => m.cost, align: "right" },
      ]),
    );
  }
  print(`\ntotal: ${body.total_requests} requests, ${body.total_prompt} prompt and ${body.total_completion} completion tokens, ${body.total_credit_used} credits`);
}

const bill = remoteCommand({
  name: "bill",
  description: "A bill per day and model (yours, or with --account a descendant's whole subtree): today, --days N, --date D, or --start S [--end E]",
  args: {
    ...RANGE_ARGS,
    account: { type: "string", description: "A descendant (ID, name or email): its bill and its subtree's (managers)", valueHint: "account" },
  },
  check: checkRange,
  async run({ args, client, json }) {
    const account = stringFlag(args, "account");
    const { body } = account
      ? await client.request<BillInfo>("GET", "/x-bill", { query: { ...rangeQuery(args), user: account } })
      : await client.request<BillInfo>("GET", "/dashboard/bill", { query: rangeQuery(args) });
    if (json) return printJson(body);
    printBill(body);
  },
});

const ranking = remoteCommand({
  name: "ranking",
  description: "The accounts under you ranked by credit used (or under --account's subtree), for a range like bill's (managers)",
  args: {
    ...RANGE_ARGS,
    account: { type: "string", description: "Rank only this descendant's subtree (ID, name or email)", valueHint: "account" },
  },
  check: checkRange,
  async run({ args, client, json }) {
    const { body } = await client.request<RankedBill>("GET", "/x-bill", {
      query: { ...rangeQuery(args), user: stringFlag(args, "account") },
    });
    if (json) return printJson(body.usage_users);
    print(
      formatTable(
        body.usage_users,
        [
          { header: "ID", value: (u) => u.id, align: "right" },
          { header: "NAME", value: (u) => u.name, max: 30 },
          { header: "EMAIL", value: (u) => u.email, max: 40 },
          { header: "REQUESTS", value: (u) => u.total_requests, align: "right" },
          { header: "CREDIT", value: (u) => u.total_credit_used, align: "right" },
          { header: "SHARE %", value: (u) => u.usage_analysis.cost_percentage, align: "right" },
          { header: "TOP MODEL", value: (u) => u.top_cost_model, max: 30 },
        ],
        "no account under you made a request in this range",
      ),
    );
  },
});

export const usageCommand = commandGroup("usage", "Usage and bills: yours, a descendant's, and the ranking of the accounts under you", { live, bill, ranking });
