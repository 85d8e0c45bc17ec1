/**
 * `router accounts list|create|update|credit|rm`: accounts in the caller's subtree
 * (`/x-users`, `/x-dna`, `/x-users/batch-credit`). An account is named by its ID,
 * email or name, as the server resolves identifiers.
 */
import type { AccountDeleted, BatchResult, CreatedAccount, ManagedAccount } from "../wire/accounts.ts";
import { UsageError } from "./flags.ts";
import {
  checkPageInfo,
  commandGroup,
  intFlag,
  jsonObjectFlag,
  numberFlag,
  pageInfoArg,
  remoteCommand,
  requirePositional,
  stringFlag,
  type Args,
} from "./client.ts";
import { formatRecord, formatTable, pageFooter, print, printJson, printJsonList, time } from "./output.ts";
import { confirmDeletion, yesArg } from "./confirm.ts";

const accountArg = { account: { type: "positional", description: "Account ID, email or name (required)", required: false } } as const;

const accountPath = (args: Args) => `/x-users/${encodeURIComponent(requirePositional(args, "account"))}`;

function showAccount(record: ManagedAccount): void {
  print(
    formatRecord([
      ["ID", record.ID],
      ["Name", record.Name],
      ["Email", record.Email],
      ["Alias", record.Alias],
      ["Parent", record.ParentID],
      ["Level", record.Level],
      ["Owner", record.IsOwner],
      ["Balance", record.Balance],
      ["Rates", record.Rates],
      ["RPM / RPD / TPM", `${record.RPM ?? "-"} / ${record.RPD ?? "-"} / ${record.TPM ?? "-"}`],
      ["Daily / hard / soft limit", `${record.DailyLimit ?? "-"} / ${record.HardLimit ?? "-"} / ${record.SoftLimit ?? "-"}`],
      ["Resources", record.Resources],
      ["Allowed models", record.AllowModels],
      ["Allowed IPs", record.AllowIPs],
      ["Key", `${record.KeyPrefix}…`],
      ["Created", time(record.CreatedAt)],
    ]),
  );
}

/** Flags that map to body fields; `--fields` carries any other field of the creation body (RPM, ModelLimits, …). */
const fieldArgs = {
  name: { type: "string", description: "Account name (4-63 characters with a letter)" },
  alias: { type: "string", description: "Display alias" },
  "billing-email": { type: "string", description: "Where spending mails go (default: the email)", valueHint: "email" },
  rates: { type: "string", description: "Price multiplier (not below yours)", valueHint: "x" },
  resources: { type: "string", description: "Allowed API paths, comma-separated patterns", valueHint: "list" },
  "allow-models": { type: "string", description: "Allowed model patterns, comma-separated", valueHint: "list" },
  "allow-ips": { type: "string", description: "Allowed client addresses or CIDR ranges, comma-separated", valueHint: "list" },
  fields: { type: "string", description: 'More fields as a JSON object or @file, e.g. {"RPM":60,"DailyLimit":5}', valueHint: "json|@file" },
} as const;

const FIELD_NAMES: Record<string, string> = {
  name: "Name",
  alias: "Alias",
  "billing-email": "BillingEmail",
  resources: "Resources",
  "allow-models": "AllowModels",
  "allow-ips": "AllowIPs",
};

function bodyOf(args: Args): Record<string, unknown> {
  const body: Record<string, unknown> = { ...jsonObjectFlag(args, "fields") };
  for (const [flag, field] of Object.entries(FIELD_NAMES)) {
    const value = stringFlag(args, flag);
    if (value !== undefined) body[field] = value;
  }
  const rates = numberFlag(args, "rates");
  if (rates !== undefined) body.Rates = rates;
  return body;
}

const list = remoteCommand({
  name: "list",
  description: "List the accounts directly under you (--all: your whole subtree)",
  args: {
    all: { type: "boolean", description: "Every account of your subtree, at any depth" },
    name: { type: "string", description: "Name contains" },
    email: { type: "string", description: "Email contains" },
    level: { type: "string", description: "Only this depth (owners are 1)", valueHint: "n" },
    order: { type: "string", description: "id, name, email, created or level; - in front reverses", valueHint: "field" },
    page: { type: "string", description: "Page, from 1", valueHint: "n" },
    size: { type: "string", description: "Accounts per page (default 20, at most 100)", valueHint: "n" },
    ...pageInfoArg,
  },
  check: (args) => void [intFlag(args, "level"), intFlag(args, "page"), intFlag(args, "size"), checkPageInfo(args)],
  async run({ args, client, json }) {
    const { body, headers } = await client.request<ManagedAccount[]>("GET", args.all === true ? "/x-dna" : "/x-users", {
      query: {
        name: stringFlag(args, "name"),
        email: stringFlag(args, "email"),
        level: intFlag(args, "level"),
        order: stringFlag(args, "order"),
        page: intFlag(args, "page"),
        size: intFlag(args, "size"),
      },
    });
    if (json) return printJsonList(body, headers, checkPageInfo(args));
    print(
      formatTable(
        body,
        [
          { header: "ID", value: (a) => a.ID, align: "right" },
          { header: "NAME", value: (a) => a.Name, max: 32 },
          { header: "EMAIL", value: (a) => a.Email, max: 40 },
          { header: "LEVEL", value: (a) => a.Level, align: "right" },
          { header: "PARENT", value: (a) => a.ParentID, align: "right" },
          { header: "BALANCE", value: (a) => a.Balance, align: "right" },
          { header: "RATES", value: (a) => a.Rates, align: "right" },
          { header: "KEY", value: (a) => `${a.KeyPrefix}…` },
          { header: "CREATED", value: (a) => time(a.CreatedAt) },
        ],
        "no accounts",
      ),
    );
    const footer = pageFooter(headers);
    if (footer) print(footer);
  },
});

const create = remoteCommand({
  name: "create",
  description: "Create an account under you; prints its API key once",
  args: {
    email: { type: "string", description: "Email of the account (required)", valueHint: "email" },
    ...fieldArgs,
    credit: { type: "string", description: "Credit to start with", valueHint: "credits" },
    days: { type: "string", description: "Days until that credit expires", valueHint: "n" },
  },
  check(args) {
    if (stringFlag(args, "email") === undefined) throw new UsageError("--email is required; see --help");
    bodyOf(args);
    numberFlag(args, "credit");
    intFlag(args, "days");
  },
  async run({ args, client, json }) {
    const body = { ...bodyOf(args), Email: stringFlag(args, "email") };
    const credit = numberFlag(args, "credit");
    if (credit !== undefined) Object.assign(body, { CreditGranted: credit });
    const days = intFlag(args, "days");
    if (days !== undefined) Object.assign(body, { Days: days });
    const { body: record } = await client.request<CreatedAccount>("POST", "/x-users", { body });
    if (json) return printJson(record);
    print(`created account ${record.ID}`);
    showAccount(record);
    print(`\nAPI key (shown once, store it now):\n${record.APIKey}`);
  },
});

const update = remoteCommand({
  name: "update",
  description: "Change an account's fields (only those given)",
  args: { ...accountArg, email: { type: "string", description: "New email", valueHint: "email" }, ...fieldArgs },
  check(args) {
    requirePositional(args, "account");
    bodyOf(args);
  },
  async run({ args, client, json }) {
    const body = bodyOf(args);
    const email = stringFlag(args, "email");
    if (email !== undefined) body.Email = email;
    if (Object.keys(body).length === 0) throw new UsageError("nothing to change; see --help for the fields");
    const { body: record } = await client.request<ManagedAccount>("PUT", accountPath(args), { body });
    if (json) return printJson(record);
    print(`updated account ${record.ID}`);
    showAccount(record);
  },
});

/** `1,2,3` → [1, 2, 3]; anything else is a usage error. */
function idList(text: string): number[] {
  const ids = text.split(",").map((part) => part.trim()).filter((part) => part !== "");
  if (ids.length === 0 || ids.some((id) => !/^\d+$/.test(id) || Number(id) < 1)) {
    throw new UsageError(`--ids must be comma-separated account IDs, e.g. 7,8,9; got "${text}"`);
  }
  return ids.map(Number);
}

const credit = remoteCommand({
  name: "credit",
  description: "Grant (or, negative, take back) credit: ACCOUNT --amount N, or --ids 1,2,3 --amount N for a batch",
  args: {
    // Not "(required)": --ids takes its place.
    account: { type: "positional", description: "Account ID, email or name (or --ids for several)", required: false },
    amount: { type: "string", description: "Credits to add; negative to deduct (required)", valueHint: "credits" },
    days: { type: "string", description: "Days until the added credit expires", valueHint: "n" },
    ids: { type: "string", description: "Several account IDs, comma-separated: one batch, each applied or skipped", valueHint: "list" },
    "dry-run": { type: "boolean", description: "Report what would happen, change nothing" },
  },
  check(args) {
    const amount = numberFlag(args, "amount");
    if (amount === undefined) throw new UsageError("--amount is required; see --help");
    if (amount === 0) throw new UsageError("--amount must not be 0");
    intFlag(args, "days");
    const ids = stringFlag(args, "ids");
    const account = stringFlag(args, "account");
    if (ids !== undefined && account !== undefined) throw new UsageError("give either an ACCOUNT or --ids, not both");
    if (ids === undefined && account === undefined) throw new UsageError("missing argument ACCOUNT (or --ids 1,2,3); see --help");
    if (ids !== undefined) idList(ids);
    if (ids === undefined && args["dry-run"] === true && !/^\d+$/.test(account!)) {
      throw new UsageError("--dry-run needs accounts by ID (e.g. 7, or --ids 7,8)");
    }
  },
  async run({ args, client, json }) {
    const amount = numberFlag(args, "amount")!;
    const days = intFlag(args, "days");
    const ids = stringFlag(args, "ids");
    if (ids !== undefined || args["dry-run"] === true) {
      const { body } = await client.request<BatchResult>("POST", "/x-users/batch-credit", {
        body: { IDs: ids !== undefined ? idList(ids) : [Number(stringFlag(args, "account"))], CreditGranted: amount, Days: days, DryRun: args["dry-run"] === true },
      });
      if (json) {
        printJson(body);
        return reportSkipped(body);
      }
      print(
        formatTable(body.results, [
          { header: "ID", value: (r) => r.ID, align: "right" },
          // A dry run changes nothing: its rows say what would happen.
          { header: "STATUS", value: (r) => (body.DryRun ? (r.status === "applied" ? "would apply" : r.status === "skipped" ? "would skip" : r.status) : r.status) },
          { header: "BEFORE", value: (r) => r.BalanceBefore, align: "right" },
          { header: "AFTER", value: (r) => r.BalanceAfter, align: "right" },
          { header: "REASON", value: (r) => r.reason, max: 60 },
        ]),
      );
      const s = body.summary;
      const counts = body.DryRun ? `dry run (nothing changed): ${s.applied} would apply, ${s.skipped} would skip` : `${s.applied} applied, ${s.skipped} skipped`;
      print(
        `${counts}; ` +
          `your credit ${signed(s.ParentCreditChange)}, theirs ${signed(s.ChildrenCreditChange)}`,
      );
      return reportSkipped(body);
    }
    const { body: record } = await client.request<ManagedAccount>("PUT", accountPath(args), {
      body: { CreditGranted: amount, ...(days !== undefined && { Days: days }) },
    });
    if (json) return printJson(record);
    print(`${amount > 0 ? "granted" : "deducted"} ${Math.abs(amount)} credits ${amount > 0 ? "to" : "from"} account ${record.ID} (${record.Email}); balance now ${record.Balance}`);
  },
});

/**
 * A billing script must not read "done" when an account got nothing: exit 1 when any entry
 * is (or, with --dry-run, would be) skipped, as `git apply --check` does; the rows are printed.
 */
function reportSkipped(body: BatchResult): void {
  const { skipped } = body.summary;
  if (skipped === 0) return;
  const total = body.results.length;
  const what = body.DryRun ? "would be skipped (see REASON)" : "skipped (see REASON): they got no credit";
  process.stderr.write(`router: ${skipped} of ${total} account${total === 1 ? "" : "s"} ${what}\n`);
  process.exitCode = 1;
}

const signed = (n: number) => (n > 0 ? `+${n}` : String(n));

const rm = remoteCommand({
  name: "rm",
  description: "Delete an account (its credit returns to its parent)",
  args: { ...accountArg, ...yesArg },
  check: (args) => void requirePositional(args, "account"),
  async run({ args, client, json }) {
    await confirmDeletion(`account ${String(args.account)}`, args);
    const { body } = await client.request<AccountDeleted>("DELETE", accountPath(args));
    if (json) return printJson(body);
    print(`deleted account ${body.ID}; ${body.CreditReturned} credits returned to its parent`);
  },
});

export const accountsCommand = commandGroup("accounts", "Manage the accounts under you", { list, create, update, credit, rm });
