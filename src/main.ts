#!/usr/bin/env bun
// First: it decides about colour before citty is loaded.
import "./cli/colour.ts";
import { defineCommand, runMain } from "citty";
import { VERSION } from "./version.ts";
import { showUsage } from "./cli/usage-screen.ts";
import { requireSubCommand } from "./cli/flags.ts";

// Everything the router writes (database, key files) is for its own user only.
process.umask(0o077);

// An admin command's output piped into a reader that has gone (`router requests | head`):
// nobody is left to read the rest, so it ends quietly instead of with an EPIPE stack
// trace. (Not `serve`: a server that loses its log pipe must not look like a clean stop.)
if (!process.argv.includes("serve")) {
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(0);
    throw error;
  });
}

// Commands are loaded when chosen: the admin commands that talk to a server over HTTP
// then start without loading the server (a few tens of ms instead of a few hundred).
const subCommands = {
    serve: () => import("./cli/serve.ts").then((m) => m.serveCommand),
    owner: () => import("./cli/owner.ts").then((m) => m.ownerCommand),
    migrate: () => import("./cli/migrate.ts").then((m) => m.migrateCommand),
    "migrate-data": () => import("./cli/migrate-data.ts").then((m) => m.migrateDataCommand),
    backup: () => import("./cli/backup.ts").then((m) => m.backupCommand),
    rekey: () => import("./cli/rekey.ts").then((m) => m.rekeyCommand),
    keys: () => import("./cli/keys.ts").then((m) => m.keysCommand),
    accounts: () => import("./cli/accounts.ts").then((m) => m.accountsCommand),
    config: () => import("./cli/config.ts").then((m) => m.configCommand),
    usage: () => import("./cli/usage.ts").then((m) => m.usageCommand),
    news: () => import("./cli/news.ts").then((m) => m.newsCommand),
    logs: () => import("./cli/logs.ts").then((m) => m.logsCommand),
    requests: () => import("./cli/requests.ts").then((m) => m.requestsCommand),
    route: () => import("./cli/route.ts").then((m) => m.routeCommand),
    version: () => import("./cli/version.ts").then((m) => m.versionCommand),
};
const main = defineCommand({
  meta: { name: "router", version: VERSION, description: "Self-hosted LLM API gateway" },
  subCommands,
  // `router` alone, or a command that does not exist: one line and exit code 2.
  setup: requireSubCommand("router", Object.keys(subCommands)),
});

// `serve` needs what the runtime reads only at start: fetch's concurrency limit, and
// trust of the upstream CA (cli/relaunch.ts).
if (process.argv.includes("serve") && !process.argv.includes("--help") && !process.argv.includes("-h")) {
  const { relaunchServe, removeCaBundleAtExit } = await import("./cli/relaunch.ts");
  relaunchServe();
  removeCaBundleAtExit();
}

await runMain(main, { showUsage });
