#!/usr/bin/env bun
import { defineCommand, runMain } from "citty";
import { migrateCommand } from "./cli/migrate.ts";
import { ownerCommand } from "./cli/owner.ts";
import { serveCommand } from "./cli/serve.ts";
import { versionCommand } from "./cli/version.ts";
import { VERSION } from "./version.ts";

// Everything the router writes (database, key files) is for its own user only.
process.umask(0o077);

const main = defineCommand({
  meta: { name: "router", version: VERSION, description: "Self-hosted LLM API gateway" },
  subCommands: {
    serve: serveCommand,
    owner: ownerCommand,
    migrate: migrateCommand,
    version: versionCommand,
  },
});

await runMain(main);
