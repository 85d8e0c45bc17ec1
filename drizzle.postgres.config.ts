import { defineConfig } from "drizzle-kit";

// The PostgreSQL twin of drizzle.config.ts: `npm run migrations` generates both, then
// scripts/index-migrations.ts embeds each folder's list into the binary.
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/store/postgres/schema/index.ts",
  out: "./src/store/postgres/migrations",
});
