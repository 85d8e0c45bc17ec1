/**
 * `router logs`: the operation log (`/dashboard/logs`, owner only), newest first,
 * 24 rows a page unless `--size` says otherwise.
 */
import type { LogPage } from "../wire/oplog.ts";
import { intFlag, remoteCommand, stringFlag } from "./client.ts";
import { formatTable, print, printJson, time } from "./output.ts";

export const logsCommand = remoteCommand({
  name: "logs",
  description: "Show the operation log of management writes (owner)",
  args: {
    page: { type: "string", description: "Page, from 1", valueHint: "n" },
    size: { type: "string", description: "Rows per page (default 24, at most 100)", valueHint: "n" },
    action: { type: "string", description: "Action name, * matches anything (e.g. account.*)", valueHint: "pattern" },
    target: { type: "string", description: "Only changes about this account ID", valueHint: "id" },
    since: { type: "string", description: "From this day or instant (YYYY-MM-DD or ISO time)", valueHint: "when" },
    until: { type: "string", description: "Through this day or instant", valueHint: "when" },
  },
  check: (args) => void [intFlag(args, "page"), intFlag(args, "size"), intFlag(args, "target")],
  async run({ args, client, json }) {
    const { body } = await client.request<LogPage>("GET", "/dashboard/logs", {
      query: {
        page: intFlag(args, "page"),
        size: intFlag(args, "size"),
        action: stringFlag(args, "action"),
        target: intFlag(args, "target"),
        since: stringFlag(args, "since"),
        until: stringFlag(args, "until"),
      },
    });
    if (json) return printJson(body);
    print(
      formatTable(
        body.logs,
        [
          { header: "ID", value: (r) => r.id, align: "right" },
          { header: "TIME", value: (r) => time(r.time) },
          { header: "ACTION", value: (r) => r.action },
          { header: "BY", value: (r) => r.operator_id, align: "right" },
          { header: "TARGET", value: (r) => r.target_id, align: "right" },
          { header: "IP", value: (r) => r.ip },
          { header: "DETAILS", value: (r) => r.details, max: 70 },
        ],
        "no operations",
      ),
    );
    const pages = Math.max(1, Math.ceil(body.total / body.size));
    print(`page ${body.page} of ${pages}, ${body.total} in all${body.has_more ? `; next: --page ${body.page + 1}` : ""}`);
  },
});
