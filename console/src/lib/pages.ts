import type { AccountStatus } from "./types.ts";

export type PageId = "user" | "accounts" | "owner" | "requests" | "playground";

export const PAGES: Record<PageId, { path: string; label: string }> = {
  owner: { path: "/console/owner", label: "Owner" },
  accounts: { path: "/console/accounts", label: "Accounts" },
  user: { path: "/console/", label: "My usage" },
  requests: { path: "/console/requests", label: "Requests" },
  playground: { path: "/console/playground", label: "Playground" },
};

/**
 * An owner reaches every page, a managing account the accounts and user pages, others
 * the user page; every account the requests page (the server scopes it) and the playground.
 */
export function allowedPages(status: AccountStatus): PageId[] {
  if (status.isOwner) return ["owner", "accounts", "user", "requests", "playground"];
  if (status.manage) return ["accounts", "user", "requests", "playground"];
  return ["user", "requests", "playground"];
}

/** The page that fits the key right after login. */
export const landingPage = (status: AccountStatus): PageId => allowedPages(status)[0]!;

export const WHY_NOT: Record<PageId, string> = {
  owner: "The owner console is only for owner accounts (first-level accounts with isOwner). This key is not an owner's.",
  accounts:
    "Sub-account management needs account-management access: the key's Resources must allow /x-users. This key does not have it.",
  user: "",
  requests: "",
  playground: "",
};

/**
 * The Requests page filtered (a bill's day links to that day's calls): the filters'
 * API names (`key_id`, never `key`), dates and names only, never a secret.
 */
export function requestsLink(filters: Partial<Record<"account" | "model" | "since" | "until", string>>): string {
  const params = new URLSearchParams();
  for (const name of ["account", "model", "since", "until"] as const) if (filters[name]) params.set(name, filters[name]!);
  const text = params.toString();
  return `${PAGES.requests.path}${text ? `?${text}` : ""}`;
}
