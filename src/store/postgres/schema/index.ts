export * from "./accounts.ts";
export * from "./provider-keys.ts";
export * from "./settings.ts";
export * from "./usage.ts";
export * from "./operation-log.ts";
export * from "./notices.ts";
export * from "./affinity.ts";
export * from "./request-log.ts";
