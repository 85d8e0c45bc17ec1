import { compilePattern, listAllows, splitList } from "../routing/patterns.ts";
import type { AccountRow } from "../store/store.ts";

/** API paths a new account may use unless its creator grants more (least privilege). */
export const DEFAULT_RESOURCES = "/v1/*,/v1beta/*,/chat/completions,/responses,/embeddings,/models,/dashboard/*,/x-self,/x-pricing";

/** The paths that make an account a manager of its subtree. */
export const MANAGEMENT_PATH = "/x-users";

/** Resources of an account: owners are unrestricted (null), others their list or the default. */
export function resourcesOf(account: Pick<AccountRow, "isOwner" | "resources">): string | null {
  if (account.isOwner) return null;
  return account.resources ?? DEFAULT_RESOURCES;
}

/** True when the account may call `path` as far as its own Resources go. */
export function resourceAllowed(account: Pick<AccountRow, "isOwner" | "resources">, path: string): boolean {
  const resources = resourcesOf(account);
  if (resources === null) return true;
  return listAllows(splitList(resources).map(compilePattern), path);
}

/** `manage: true` in /dashboard/status: owners, and accounts whose Resources allow /x-users. */
export function canManage(account: Pick<AccountRow, "isOwner" | "resources">): boolean {
  return resourceAllowed(account, MANAGEMENT_PATH);
}
