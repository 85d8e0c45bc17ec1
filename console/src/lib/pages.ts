import type { AccountStatus } from "./types.ts";

export type PageId = "user" | "accounts" | "owner" | "playground";

export const PAGES: Record<PageId, { path: string; label: string }> = {
  owner: { path: "/console/owner", label: "Owner" },
  accounts: { path: "/console/accounts", label: "Accounts" },
  user: { path: "/console/", label: "My usage" },
  playground: { path: "/console/playground", label: "Playground" },
};

/** An owner reaches every page, a managing account the accounts and user pages, others the user page; every account the playground. */
export function allowedPages(status: AccountStatus): PageId[] {
  if (status.isOwner) return ["owner", "accounts", "user", "playground"];
  if (status.manage) return ["accounts", "user", "playground"];
  return ["user", "playground"];
}

/** The page that fits the key right after login. */
export const landingPage = (status: AccountStatus): PageId => allowedPages(status)[0]!;

export const WHY_NOT: Record<PageId, string> = {
  owner: "The owner console is only for owner accounts (first-level accounts with isOwner). This key is not an owner's.",
  accounts:
    "Sub-account management needs account-management access: the key's Resources must allow /x-users. This key does not have it.",
  user: "",
  playground: "",
};
