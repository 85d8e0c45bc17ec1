/**
 * `router config get|set|add|rm|reset|import|export`: the system configuration items
 * (`/x-config`, owner only). `export` writes the `configs` object of
 * `GET /x-config`, which `import` sends back with `PUT /x-config`, so a deployment
 * can be copied (EMAIL_PASS travels as its mask and stays as stored).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { CONFIG_ITEM_DEFAULTS, CONFIG_ITEM_NAMES, type ConfigExport, type ConfigItemName } from "../wire/config.ts";
import { MAPPER_ITEMS, mapperEntries, mapperText, type MapperEntry } from "../wire/mapper-text.ts";
import { UsageError } from "./flags.ts";
import { commandGroup, readStdin, remoteCommand, requirePositional, stringFlag, type Args, type RemoteContext } from "./client.ts";
import { cell, formatTable, print, printJson } from "./output.ts";

const ITEM = /^[A-Z][A-Z0-9_]*$/;

function itemArgument(args: Args): string {
  const item = requirePositional(args, "item");
  if (!ITEM.test(item)) throw new UsageError(`ITEM must be an item name such as MODEL_MAPPER, got "${item}"`);
  return item;
}

/** ITEM of get: one this build knows, so a typo is not reported as an item that is not set. */
function knownItem(args: Args): ConfigItemName {
  const item = itemArgument(args);
  if (!(CONFIG_ITEM_NAMES as string[]).includes(item)) throw new UsageError(`unknown configuration item "${item}"; items: ${CONFIG_ITEM_NAMES.join(", ")}`);
  return item as ConfigItemName;
}

const get = remoteCommand({
  name: "get",
  description: "Show every configuration item set, or one ITEM's value (exit 1 when ITEM is not set: its default goes to stderr)",
  args: { item: { type: "positional", description: "One item, e.g. MODEL_MAPPER (default: all)", required: false } },
  check: (args) => void (stringFlag(args, "item") !== undefined && knownItem(args)),
  async run({ args, client, json }) {
    const { body } = await client.request<ConfigExport>("GET", "/x-config");
    const item = stringFlag(args, "item");
    if (item === undefined) {
      if (json) return printJson(body);
      const rows = Object.entries(body.configs);
      print(
        formatTable(
          rows,
          [
            { header: "ITEM", value: ([name]) => name },
            { header: "VALUE", value: ([, value]) => value, max: 100 },
          ],
          "no configuration item is set (defaults apply)",
        ),
      );
      return;
    }
    const value = body.configs[item];
    // As `git config --get`: an unset item is exit 1, so a script tells it from one set
    // (to "" too); the default it falls back to goes to stderr, stdout stays empty (--json: null).
    if (value === undefined) {
      if (json) printJson(null);
      else process.stderr.write(`router: ${item} is not set (default: ${CONFIG_ITEM_DEFAULTS[item as ConfigItemName]})\n`);
      process.exitCode = 1;
      return;
    }
    if (json) return printJson(value);
    // One value alone: a string as is, anything else as readable JSON.
    print(typeof value === "string" ? cell(value, Infinity) : JSON.stringify(value, null, 2));
  },
});

/** A value as typed: JSON objects and arrays are sent as such, everything else as the string given. */
function valueOf(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      return JSON.parse(trimmed) as unknown;
    } catch {
      // the server explains what it expects
    }
  }
  return text;
}

const set = remoteCommand({
  name: "set",
  description: "Set one item: ITEM VALUE, replacing its whole value (VALUE - reads stdin; --file FILE reads a file; one mapper entry: config add/rm)",
  args: {
    item: { type: "positional", description: "Item name, e.g. MODEL_MAPPER (required)", required: false },
    value: { type: "positional", description: "The value; - to read it from stdin", required: false },
    file: { type: "string", description: "Read the value from this file", valueHint: "file" },
  },
  check(args) {
    itemArgument(args);
    const file = stringFlag(args, "file");
    const value = stringFlag(args, "value");
    if (file !== undefined && value !== undefined) throw new UsageError("give either VALUE or --file, not both");
    if (file === undefined && value === undefined) throw new UsageError("missing argument VALUE (or --file FILE); see --help");
  },
  async run({ args, client, json }) {
    const item = itemArgument(args);
    const file = stringFlag(args, "file");
    const inline = stringFlag(args, "value");
    let text: string;
    if (file !== undefined) {
      try {
        text = readFileSync(file, "utf8").replace(/[\r\n]+$/, "");
      } catch (error) {
        throw new UsageError(`--file: cannot read ${file}: ${(error as Error).message}`);
      }
    } else if (inline === "-") {
      text = readStdin().replace(/[\r\n]+$/, "");
    } else {
      text = inline!;
      if (item === "EMAIL_PASS") {
        process.stderr.write("router: warning: a password on the command line stays in your shell history; prefer VALUE - (stdin)\n");
      }
    }
    const { body } = await client.request<ConfigExport>("PUT", "/x-config", { body: { [item]: valueOf(text) } });
    if (json) return printJson(body);
    const stored = body.configs[item];
    print(`${item} set${stored === undefined ? "" : `: ${cell(stored, 200)}`}`);
  },
});

/** ITEM of add and rm: an item whose value is a list of `pattern=value` entries, changed one entry at a time. */
function entryItem(args: Args): string {
  const item = itemArgument(args);
  if (!MAPPER_ITEMS.includes(item)) throw new UsageError(`ITEM must be one of ${MAPPER_ITEMS.join(", ")} (other items: config set)`);
  return item;
}

/** The entries of a mapper item as `GET /x-config` exports them (`a=b,c=d`, in order); none when unset. */
async function entriesOf(client: RemoteContext["client"], item: string): Promise<MapperEntry[]> {
  const { body } = await client.request<ConfigExport>("GET", "/x-config");
  return mapperEntries(body.configs[item]);
}

/**
 * Reads, changes one entry and writes the item back. Two owners changing the same item
 * at the same moment may overwrite each other's entry: the last write wins.
 */
const add = remoteCommand({
  name: "add",
  description: "Add or change one entry of MODEL_MAPPER, LEVEL_MAPPER or SWITCH_OVER: ITEM 'pattern=value'; the other entries stay",
  args: {
    item: { type: "positional", description: "MODEL_MAPPER, LEVEL_MAPPER or SWITCH_OVER (required)", required: false },
    entry: { type: "positional", description: "pattern=value, e.g. 'gpt-4*=gpt-4o' or 'claude-*=2' (required)", required: false },
  },
  check(args) {
    entryItem(args);
    const entry = requirePositional(args, "entry");
    const at = entry.indexOf("=");
    if (at <= 0 || at === entry.length - 1) throw new UsageError(`ENTRY must be pattern=value, got "${entry}"`);
    // They separate the entries of the item's text form; the router refuses them in a name.
    if (entry.includes(",") || entry.indexOf("=", at + 1) >= 0) throw new UsageError(`ENTRY is one pattern=value, without another "," or "=", got "${entry}"`);
  },
  async run({ args, client, json }) {
    const item = entryItem(args);
    const entry = requirePositional(args, "entry");
    const at = entry.indexOf("=");
    const [pattern, value] = [entry.slice(0, at).trim(), entry.slice(at + 1).trim()];
    const entries = await entriesOf(client, item);
    // A changed entry keeps its place (ties between patterns go to the earlier one); a new one goes last.
    const existing = entries.find((e) => e.left === pattern);
    if (existing) existing.right = value;
    else entries.push({ left: pattern, right: value });
    const { body } = await client.request<ConfigExport>("PUT", "/x-config", { body: { [item]: mapperText(entries) } });
    if (json) return printJson(body);
    const changed = existing !== undefined;
    const count = entries.length;
    print(`${item}: ${changed ? "changed" : "added"} ${pattern}=${value} (${count} entr${count === 1 ? "y" : "ies"})`);
  },
});

const rm = remoteCommand({
  name: "rm",
  description: "Remove one entry of MODEL_MAPPER, LEVEL_MAPPER or SWITCH_OVER by its pattern: ITEM PATTERN; the other entries stay",
  args: {
    item: { type: "positional", description: "MODEL_MAPPER, LEVEL_MAPPER or SWITCH_OVER (required)", required: false },
    pattern: { type: "positional", description: "The entry's pattern, as `config get ITEM` shows it (required)", required: false },
  },
  check(args) {
    entryItem(args);
    requirePositional(args, "pattern");
  },
  async run({ args, client, json }) {
    const item = entryItem(args);
    const pattern = requirePositional(args, "pattern");
    const all = await entriesOf(client, item);
    const entries = all.filter((e) => e.left !== pattern);
    if (entries.length === all.length) throw new Error(`${item} has no entry for ${pattern}; see router config get ${item}`);
    const count = entries.length;
    // The last entry gone: the item is reset rather than set to nothing.
    const { body } =
      count === 0
        ? await client.request<ConfigExport>("DELETE", "/x-config", { body: { keys: [item] } })
        : await client.request<ConfigExport>("PUT", "/x-config", { body: { [item]: mapperText(entries) } });
    if (json) return printJson(body);
    print(`${item}: removed ${pattern} (${count} entr${count === 1 ? "y" : "ies"} left)`);
  },
});

const reset = remoteCommand({
  name: "reset",
  description: "Reset an item to its default: ITEM (unset; PRICING: the catalog's prices again)",
  args: { item: { type: "positional", description: "An item name such as XAI_MAIL (required)", required: false } },
  check: (args) => void itemArgument(args),
  async run({ args, client, json }) {
    const item = itemArgument(args);
    const { body } = await client.request<ConfigExport>("DELETE", "/x-config", { body: { keys: [item] } });
    if (json) return printJson(body);
    print(`${item} reset`);
  },
});

/** An export file: the `configs` object, or the whole `GET /x-config` answer. */
function readExport(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = path === "-" ? readStdin() : readFileSync(path, "utf8");
  } catch (error) {
    throw new UsageError(`cannot read ${path}: ${(error as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${path} is not valid JSON: ${(error as Error).message}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new UsageError(`${path} must hold a JSON object of item → value`);
  const configs = (value as { configs?: unknown }).configs;
  if (configs !== undefined && configs !== null && typeof configs === "object" && !Array.isArray(configs)) {
    return configs as Record<string, unknown>;
  }
  return value as Record<string, unknown>;
}

const importCommand = remoteCommand({
  name: "import",
  description: "Apply a file written by `config export` (or - for stdin); items not in it are left as they are",
  args: { file: { type: "positional", description: "JSON file of item → value, or - for stdin (required)", required: false } },
  check: (args) => void requirePositional(args, "file"),
  async run({ args, client, json }) {
    const values = readExport(requirePositional(args, "file"));
    const items = Object.keys(values);
    if (items.length === 0) {
      if (json) return printJson({ configs: {} });
      print("nothing to import: the file names no item");
      return;
    }
    const { body } = await client.request<ConfigExport>("PUT", "/x-config", { body: values });
    if (json) return printJson(body);
    print(`imported ${items.length} item${items.length === 1 ? "" : "s"}: ${items.join(", ")}`);
  },
});

const exportCommand = remoteCommand({
  name: "export",
  description: "Write every item set as JSON (stdout, or --out FILE) for `config import`",
  args: {
    out: { type: "string", description: "Write to this file (mode 0600) instead of stdout", valueHint: "file" },
    force: { type: "boolean", description: "Overwrite --out if it exists" },
  },
  async run({ args, client }) {
    const { body } = await client.request<ConfigExport>("GET", "/x-config");
    const text = JSON.stringify(body.configs, null, 2) + "\n";
    const out = stringFlag(args, "out");
    if (out === undefined) return void process.stdout.write(text);
    if (existsSync(out) && args.force !== true) throw new Error(`${out} exists; repeat with --force to overwrite it`);
    writeFileSync(out, text, { mode: 0o600 });
    const count = Object.keys(body.configs).length;
    print(`exported ${count} item${count === 1 ? "" : "s"} to ${out}`);
  },
});

export const configCommand = commandGroup("config", "Read and change the system configuration (owner)", {
  get,
  set,
  add,
  rm,
  reset,
  import: importCommand,
  export: exportCommand,
});
