import type { ArgsDef } from "citty";

/** Flags every command that opens the database takes. */
export const dataArgs = {
  data: { type: "string", description: "Data directory (env ROUTER_DATA; default ./data)", valueHint: "dir" },
  "secret-key-file": {
    type: "string",
    description: "Key file sealing provider secrets (env ROUTER_SECRET_KEY_FILE; default <data>/secret.key)",
    valueHint: "file",
  },
} as const satisfies ArgsDef;
