import { ancestorIds } from "../../accounts/chain.ts";
import { principalOf } from "../../accounts/principal.ts";
import { HttpError } from "../../core/errors.ts";
import { checkAccess, checkModel } from "../../http/access.ts";
import type { AccountRow } from "../../store/store.ts";
import { REALTIME_PATH } from "./handshake.ts";
import type { RealtimeSession } from "./session.ts";

/**
 * Why a live realtime session may no longer run, or undefined when it may: the same
 * checks as its handshake, against the account as it is now. A session dies with the
 * key it was opened with (rotated, or its account or an ancestor deleted) and when its
 * account's Resources, AllowModels or AllowIPs, or the system RESOURCES, no longer
 * allow it. A session opened with a client secret is bound to the account that minted
 * it, and dies likewise.
 */
export async function revocationOf(session: RealtimeSession, findLive: (accountId: number) => Promise<AccountRow | undefined>): Promise<string | undefined> {
  const opened = session.principal.account;
  const current = await findLive(opened.id);
  if (!current) return "the account was deleted";
  if (current.keyHash !== opened.keyHash) return "the API key the session was opened with was rotated";
  const ancestors = await Promise.all(ancestorIds(current).map(findLive));
  if (ancestors.some((row) => row === undefined)) return "an account above this one was deleted";
  const principal = principalOf(current);
  try {
    checkAccess(principal, REALTIME_PATH, () => session.clientIp, session.tenant.settings.resources());
    checkModel(principal, session.requestedModel);
  } catch (error) {
    if (error instanceof HttpError) return `access changed: ${error.message}`;
    throw error;
  }
  return undefined;
}
