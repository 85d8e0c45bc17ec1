export * from "./accounts.ts";
export * from "./settings.ts";
