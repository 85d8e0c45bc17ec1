import { defineCommand } from "citty";
import { VERSION } from "../version.ts";
import { rejectStrayArguments, rejectUnknownFlags } from "./flags.ts";
import { runOrExit } from "./run.ts";

export const versionCommand = defineCommand({
  meta: { name: "version", description: "Print the version" },
  run: ({ args, rawArgs }) =>
    runOrExit(() => {
      rejectUnknownFlags(rawArgs, {});
      rejectStrayArguments(args);
      process.stdout.write(`router ${VERSION}\n`);
    }),
});
