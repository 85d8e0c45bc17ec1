import { defineConfig } from "drizzle-kit";

// `npm run migrations` turns schema changes into a new numbered SQL file here,
// then scripts/index-migrations.ts embeds the list into the binary.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/store/schema/index.ts",
  out: "./src/store/migrations",
});
