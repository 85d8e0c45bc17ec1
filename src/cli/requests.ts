/**
 * `router requests [filters] [--follow]` and `router requests show ID`: the request log
 * (`GET /x-requests`, `GET /x-requests/{request_id}`), scoped by the server as the
 * console's Requests page is (an owner its tenant, a manager its subtree, any account
 * its own calls). `--follow` asks for the newest calls every few seconds and prints
 * the ones it has not printed yet, oldest first, until interrupted.
 */
import type { RequestRecord } from "../wire/requests.ts";
import { UsageError } from "./flags.ts";
import { checkPageInfo, intFlag, pageInfoArg, remoteCommand, stringFlag, type Args, type Client } from "./client.ts";
import { fixedColumns, formatRecord, formatTable, pageFooter, print, printJson, printJsonList, time, type Column } from "./output.ts";

const filterArgs = {
  account: { type: "string", description: "Only this account's calls (ID, name or email; owners and managers)", valueHint: "account" },
  model: { type: "string", description: "Requested or effective model", valueHint: "model" },
  status: { type: "string", description: "A status (429) or a class (5xx)", valueHint: "code" },
  "key-id": { type: "string", description: "Owner: calls any of whose attempts used this provider key", valueHint: "id" },
  level: { type: "string", description: "Owner: calls any of whose attempts used this Level", valueHint: "n" },
  since: { type: "string", description: "From this day or instant (YYYY-MM-DD or ISO time)", valueHint: "when" },
  until: { type: "string", description: "Through this day or instant", valueHint: "when" },
  "request-id": { type: "string", description: "One call, by its X-Request-Id", valueHint: "id" },
} as const;

/** `GET /x-requests`'s query from the flags (`key_id`, not `key`: a `?key=` is refused as a key in the URL). */
const filterQuery = (args: Args) => ({
  account: stringFlag(args, "account"),
  model: stringFlag(args, "model"),
  status: stringFlag(args, "status"),
  key_id: intFlag(args, "key-id"),
  level: intFlag(args, "level"),
  since: stringFlag(args, "since"),
  until: stringFlag(args, "until"),
  request_id: stringFlag(args, "request-id"),
});

const model = (r: RequestRecord) => {
  const asked = r.requested_model ?? "-";
  return r.effective_model && r.effective_model !== asked ? `${asked} -> ${r.effective_model}` : asked;
};
const ms = (n: number | null) => (n === null ? null : `${n} ms`);

const COLUMNS: Array<Column<RequestRecord> & { width: number }> = [
  { header: "TIME", value: (r) => time(r.time), width: 26 },
  { header: "ACCOUNT", value: (r) => `${r.account.name ?? "?"} #${r.account.id}`, width: 20, max: 24 },
  { header: "MODEL", value: model, width: 28, max: 40 },
  { header: "STATUS", value: (r) => r.status, align: "right", width: 6 },
  { header: "TOKENS", value: (r) => r.tokens.prompt + r.tokens.completion, align: "right", width: 8 },
  { header: "COST", value: (r) => `${r.cost}${r.source === "estimated" ? "~" : ""}`, align: "right", width: 12 },
  { header: "DURATION", value: (r) => ms(r.duration_ms), align: "right", width: 10 },
  { header: "TTFB", value: (r) => ms(r.ttfb_ms), align: "right", width: 9 },
  { header: "REQUEST ID", value: (r) => r.request_id, width: 40, max: 60 },
];

/** The seconds between two looks of `--follow`. */
function intervalOf(args: Args): number {
  const seconds = intFlag(args, "interval") ?? 3;
  if (seconds > 3600) throw new UsageError("--interval must be at most 3600 seconds");
  return seconds;
}

/** Prints new calls as they are recorded, oldest first, until interrupted. */
async function follow(client: Client, args: Args, json: boolean): Promise<never> {
  const query = filterQuery(args);
  const printed = new Set<string>();
  const order: string[] = [];
  const columns = fixedColumns(COLUMNS);
  const show = (rows: RequestRecord[]) => {
    for (const row of rows.filter((r) => !printed.has(r.request_id)).reverse()) {
      printed.add(row.request_id);
      order.push(row.request_id);
      print(json ? JSON.stringify(row) : columns.line(row));
    }
    // Remembers enough to tell new calls from printed ones (the newest 100 are all it reads).
    while (order.length > 1000) printed.delete(order.shift()!);
  };
  const first = await client.request<RequestRecord[]>("GET", "/x-requests", { query: { ...query, size: intFlag(args, "size") ?? 20 } });
  if (!json) print(columns.header);
  show(first.body);
  for (;;) {
    await Bun.sleep(intervalOf(args) * 1000);
    show((await client.request<RequestRecord[]>("GET", "/x-requests", { query: { ...query, size: 100 } })).body);
  }
}

async function list(client: Client, args: Args, json: boolean): Promise<void> {
  const { body, headers } = await client.request<RequestRecord[]>("GET", "/x-requests", {
    query: { ...filterQuery(args), page: intFlag(args, "page"), size: intFlag(args, "size") },
  });
  if (json) return printJsonList(body, headers, checkPageInfo(args));
  print(formatTable(body, COLUMNS, "no calls match"));
  const footer = pageFooter(headers);
  if (footer) print(footer);
}

async function show(client: Client, id: string, json: boolean): Promise<void> {
  const { body: r } = await client.request<RequestRecord>("GET", `/x-requests/${encodeURIComponent(id)}`);
  if (json) return printJson(r);
  const t = r.tokens;
  print(
    formatRecord([
      ["Request ID", r.request_id],
      ["Time", time(r.time)],
      ["Account", `${r.account.name ?? "?"} #${r.account.id}${r.account.email ? ` (${r.account.email})` : ""}`],
      ["Endpoint", `${r.endpoint} (${r.family})${r.stream ? ", streamed" : ""}`],
      ["Requested model", r.requested_model],
      ["Effective model", r.effective_model],
      ["Status", r.status],
      ["TTFB", ms(r.ttfb_ms)],
      ["Duration", ms(r.duration_ms)],
      ["Tokens", `${t.prompt} prompt, ${t.completion} completion, ${t.cache_read} cache read, ${t.cache_write} cache write, ${t.reasoning} reasoning`],
      ["Cost", `${r.cost} credits${r.source === "estimated" ? " (estimated)" : ""}`],
      ["Client IP", r.client_ip],
      ["User agent", r.user_agent],
    ]),
  );
  const withKeys = r.attempts.some((a) => a.key_id !== undefined);
  print("attempts:");
  print(
    formatTable(
      r.attempts.map((a, i) => ({ ...a, n: i + 1 })),
      [
        { header: "#", value: (a) => a.n, align: "right" },
        { header: "ANSWERED", value: (a) => a.answered },
        ...(withKeys ? [{ header: "KEY", value: (a: { key_id?: number; key_name?: string }) => `${a.key_name || "-"} #${a.key_id}`, max: 30 }] : []),
        { header: "LEVEL", value: (a) => a.level, align: "right" },
        { header: "STATUS", value: (a) => a.status ?? "none", align: "right" },
        { header: "ERROR", value: (a) => a.error },
        { header: "DURATION", value: (a) => ms(a.duration_ms), align: "right" },
        { header: "MESSAGE", value: (a) => a.message, max: 80 },
      ],
      "no upstream attempt (refused before routing)",
    ),
  );
}

export const requestsCommand = remoteCommand({
  name: "requests",
  description: "Model calls, newest first (router requests [filters] [--follow]; router requests show ID)",
  args: {
    what: { type: "positional", description: "show, to see one call in full with its attempts", required: false },
    id: { type: "positional", description: "The call's request ID (X-Request-Id), with show", required: false },
    ...filterArgs,
    page: { type: "string", description: "Page, from 1", valueHint: "n" },
    size: { type: "string", description: "Calls per page (default 20, at most 100)", valueHint: "n" },
    follow: { type: "boolean", description: "Keep printing new calls as they are recorded, until interrupted (Ctrl-C)" },
    interval: { type: "string", description: "With --follow: seconds between two looks (default 3)", valueHint: "s" },
    ...pageInfoArg,
  },
  check(args) {
    const what = stringFlag(args, "what");
    if (what !== undefined && what !== "show") throw new UsageError(`unknown command "${what}": router requests [filters] or router requests show ID`);
    if (what === "show") {
      const id = stringFlag(args, "id");
      if (id === undefined) throw new UsageError("missing argument ID: router requests show ID");
      if (!/^[\w.-]{1,100}$/.test(id)) throw new UsageError(`ID must be a request ID such as req_…, got "${id}"`);
      const filters = Object.keys(filterArgs).filter((name) => stringFlag(args, name) !== undefined);
      if (filters.length > 0 || args.follow === true) throw new UsageError("show takes no filters or --follow");
    }
    if (args.follow === true && stringFlag(args, "page") !== undefined) throw new UsageError("--follow shows the newest calls: it takes no --page");
    if (args["page-info"] === true && (args.follow === true || what === "show")) throw new UsageError("--page-info is for a page of calls, not --follow or show");
    checkPageInfo(args);
    void [intFlag(args, "page"), intFlag(args, "size"), intFlag(args, "key-id"), intFlag(args, "level"), intervalOf(args)];
  },
  async run({ args, client, json }) {
    if (stringFlag(args, "what") === "show") return show(client, stringFlag(args, "id")!, json);
    if (args.follow === true) return follow(client, args, json);
    return list(client, args, json);
  },
});
