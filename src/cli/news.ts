/**
 * `router news list|send|rm`: broadcast notices (`/x-news`). Without `--target` a
 * notice is system-wide (owners only); with one it reaches that account and its
 * whole subtree.
 */
import type { Notice, NoticeDeleted } from "../wire/notices.ts";
import { UsageError } from "./flags.ts";
import { checkPageInfo, commandGroup, idArgument, intFlag, pageInfoArg, readStdin, remoteCommand, stringFlag } from "./client.ts";
import { formatRecord, formatTable, pageFooter, print, printJson, printJsonList, time } from "./output.ts";
import { confirmDeletion, yesArg } from "./confirm.ts";

const list = remoteCommand({
  name: "list",
  description: "The notices you published (owners: every system-wide notice too), newest first",
  args: {
    page: { type: "string", description: "Page, from 1", valueHint: "n" },
    size: { type: "string", description: "Notices per page (default 20, at most 100)", valueHint: "n" },
    ...pageInfoArg,
  },
  check: (args) => void [intFlag(args, "page"), intFlag(args, "size"), checkPageInfo(args)],
  async run({ args, client, json }) {
    const { body, headers } = await client.request<Notice[]>("GET", "/x-news", { query: { page: intFlag(args, "page"), size: intFlag(args, "size") } });
    if (json) return printJsonList(body, headers, checkPageInfo(args));
    const now = new Date().toISOString();
    print(
      formatTable(
        body,
        [
          { header: "ID", value: (n) => n.id, align: "right" },
          { header: "TITLE", value: (n) => n.title, max: 40 },
          { header: "TARGET", value: (n) => n.target_id ?? "everyone" },
          { header: "AUTHOR", value: (n) => n.author_id, align: "right" },
          { header: "CREATED", value: (n) => time(n.created_at) },
          { header: "EXPIRES", value: (n) => `${time(n.expires_at)}${n.expires_at < now ? " (expired)" : ""}` },
          { header: "CONTENT", value: (n) => n.content, max: 40 },
        ],
        "no notices",
      ),
    );
    const footer = pageFooter(headers);
    if (footer) print(footer);
  },
});

const send = remoteCommand({
  name: "send",
  description: "Publish a notice: --title T --content C (- reads stdin) [--target ACCOUNT] [--days N]",
  args: {
    title: { type: "string", description: "Title, at most 100 characters (required)" },
    content: { type: "string", description: "Text, at most 1000 characters, or - to read it from stdin (required)", valueHint: "text|-" },
    target: { type: "string", description: "Account ID, email or name: it and its subtree (default: everyone, owners only)", valueHint: "account" },
    days: { type: "string", description: "Days until it expires (default 30, at most 365)", valueHint: "n" },
  },
  check(args) {
    if (stringFlag(args, "title") === undefined) throw new UsageError("--title is required; see --help");
    if (stringFlag(args, "content") === undefined) throw new UsageError("--content is required (- reads stdin); see --help");
    intFlag(args, "days");
  },
  async run({ args, client, json }) {
    const content = stringFlag(args, "content") === "-" ? readStdin() : stringFlag(args, "content");
    const { body } = await client.request<Notice>("POST", "/x-news", {
      body: { title: stringFlag(args, "title"), content, target: stringFlag(args, "target"), days: intFlag(args, "days") },
    });
    if (json) return printJson(body);
    print(`published notice ${body.id}`);
    print(
      formatRecord([
        ["Title", body.title],
        ["Target", body.target_id ?? "everyone"],
        ["Expires", time(body.expires_at)],
      ]),
    );
  },
});

const rm = remoteCommand({
  name: "rm",
  description: "Delete a notice (its author or an owner)",
  args: { id: { type: "positional", description: "Notice ID (required)", required: false }, ...yesArg },
  check: (args) => void idArgument(args),
  async run({ args, client, json }) {
    await confirmDeletion(`notice ${idArgument(args)}`, args);
    const { body } = await client.request<NoticeDeleted>("DELETE", `/x-news/${idArgument(args)}`);
    if (json) return printJson(body);
    print(`deleted notice ${body.id}`);
  },
});

export const newsCommand = commandGroup("news", "Publish and manage broadcast notices", { list, send, rm });
