import { Elysia } from "elysia";
import { canManage } from "../../accounts/access.ts";
import { normaliseEmail } from "../../accounts/validation.ts";
import type { AccountsService } from "../../accounts/service.ts";
import type { ServeConfig } from "../../config.ts";
import type { Clock } from "../../core/clock.ts";
import { badRequest, forbidden, notFound } from "../../core/errors.ts";
import type { AuthPluginDeps } from "../../http/auth-deps.ts";
import { readJsonObject } from "../../http/body.ts";
import { clientIp } from "../../http/client-ip.ts";
import { pageParams, paginationHeaders } from "../../http/pagination.ts";
import { authPlugin } from "../../http/plugins.ts";
import type { AccountRow, NoticeRow, Store } from "../../store/store.ts";
import type { OperationLog } from "../oplog/writer.ts";
import { bodyCheck } from "../../wire/check.ts";
import { NOTICE_CONTENT_MAX, NOTICE_TITLE_MAX } from "../../wire/constants.ts";
import { NoticeBody, type Notice } from "../../wire/notices.ts";

/** Most notices `GET /dashboard/news` returns: the newest ones. */
const MAX_FEED = 100;

export const DEFAULT_DAYS = 30;
const DAY_MS = 86_400_000;

export interface NoticeInput {
  title: string;
  content: string;
  /** Account identifier (ID, name or email); undefined: system-wide. */
  target: string | undefined;
  days: number;
}

/** Length in characters (code points), so an emoji counts once. */
const length = (text: string) => [...text].length;

function requiredText(value: string, field: "title" | "content", max: number): string {
  const text = value.trim();
  if (text === "") throw badRequest(`${field} is required (a non-empty string)`, field);
  if (length(text) > max) throw badRequest(`${field} must be at most ${max} characters (got ${length(text)})`, field);
  return text;
}

/**
 * Types, the days range and unknown fields are the model's (src/wire/notices.ts);
 * emptiness and lengths are of the trimmed text, in code points, so they are checked here.
 */
const checkNoticeBody = bodyCheck(NoticeBody, {
  rules: {
    title: (title) => void requiredText(title, "title", NOTICE_TITLE_MAX),
    content: (content) => void requiredText(content, "content", NOTICE_CONTENT_MAX),
    target: (target) => {
      if (typeof target === "string" && target.trim() === "") throw badRequest("target must be an account ID, name or email", "target");
    },
  },
});

/** Reads and checks a `POST /x-news` body. */
export function readNoticeInput(raw: Record<string, unknown>): NoticeInput {
  const body = checkNoticeBody(raw);
  const target = typeof body.target === "number" ? String(body.target) : typeof body.target === "string" ? body.target.trim() : undefined;
  return { title: body.title.trim(), content: body.content.trim(), target, days: body.days ?? DEFAULT_DAYS };
}

export function noticeRecord(row: NoticeRow): Notice {
  return {
    object: "notice",
    id: row.id,
    title: row.title,
    content: row.content,
    target_id: row.targetId,
    author_id: row.authorId,
    created_at: new Date(row.createdAt).toISOString(),
    expires_at: new Date(row.expiresAt).toISOString(),
  };
}

/** The caller itself, named by ID, email or name (a manager addressing its whole subtree). */
function isSelf(caller: AccountRow, identifier: string): boolean {
  if (/^\d+$/.test(identifier)) return Number(identifier) === caller.id;
  if (identifier.includes("@")) return normaliseEmail(identifier) === caller.email;
  return identifier === caller.name;
}

/** Ancestry of an account from its materialised path (`/1/4/9/` → 1, 4, 9), itself included. */
export function ancestorsOf(account: Pick<AccountRow, "id" | "path">): number[] {
  const ids = account.path.split("/").filter(Boolean).map(Number).filter(Number.isSafeInteger);
  return ids.includes(account.id) ? ids : [...ids, account.id];
}

/** What the notice routes use: the notices, target lookup in the caller's subtree, and the audit log. */
export interface NoticeRouteDeps {
  store: Pick<Store, "notices">;
  accountsService: Pick<AccountsService, "resolve">;
  oplog: OperationLog;
  clock: Clock;
  config: Pick<ServeConfig, "maxBody" | "trustProxy">;
}

/**
 * Broadcast notices (spec 2.5, 5 rule 6). System-wide notices (no `target`) are
 * for owners only; a targeted notice needs management access and a target in the
 * caller's subtree (or the caller itself), and reaches the target and everything
 * under it. Authors and owners delete; every account reads its own feed.
 */
export function noticeRoutes(deps: NoticeRouteDeps & AuthPluginDeps) {
  const notices = deps.store.notices;
  const ipOf = (request: Request) => clientIp(request, deps.config.trustProxy) ?? null;

  const targetOf = async (caller: AccountRow, identifier: string | undefined): Promise<AccountRow | null> => {
    if (identifier === undefined) {
      if (!caller.isOwner) throw forbidden("Only owner accounts may publish system-wide notices; name a target account", "owner_only");
      return null;
    }
    if (!canManage(caller)) {
      throw forbidden("Publishing notices needs account management (this API key's Resources do not include /x-users)", "manage_not_allowed");
    }
    return isSelf(caller, identifier) ? caller : deps.accountsService.resolve(caller, identifier, "subtree");
  };

  return new Elysia()
    .use(authPlugin(deps))
    .post(
      "/x-news",
      async ({ principal, tenant, request, set }) => {
        const caller = principal.account;
        const input = readNoticeInput(await readJsonObject(request, deps.config.maxBody));
        const target = await targetOf(caller, input.target);
        const now = deps.clock.now();
        const row = await notices.create({
          tenantId: tenant.tenantId,
          title: input.title,
          content: input.content,
          authorId: caller.id,
          targetId: target?.id ?? null,
          createdAt: now,
          expiresAt: now + input.days * DAY_MS,
        });
        await deps.oplog.write({
          tenantId: tenant.tenantId,
          actorId: caller.id,
          action: "news.create",
          targetId: row.targetId,
          details: { id: row.id, title: row.title, target: row.targetId, days: input.days },
          ip: ipOf(request),
        });
        set.status = 201;
        return noticeRecord(row);
      },
      { auth: true, parse: "none" },
    )
    .get(
      "/x-news",
      async ({ principal, tenant, request, set }) => {
        const { page, size } = pageParams(new URL(request.url).searchParams);
        const { rows, total } = await notices.listManaged(tenant.tenantId, principal.account.id, principal.account.isOwner, page, size);
        Object.assign(set.headers, paginationHeaders(total, page, size));
        return rows.map(noticeRecord);
      },
      { auth: true },
    )
    .delete(
      "/x-news/:id",
      async ({ principal, tenant, request, params }) => {
        const caller = principal.account;
        const id = /^\d+$/.test(params.id) ? Number(params.id) : NaN;
        const row = Number.isSafeInteger(id) ? await notices.get(tenant.tenantId, id) : undefined;
        // Someone else's notice does not exist for a caller that may not delete it.
        if (!row || !(row.authorId === caller.id || caller.isOwner)) throw notFound(`Notice ${params.id} not found`, "notice_not_found");
        await notices.remove(row.id);
        await deps.oplog.write({
          tenantId: tenant.tenantId,
          actorId: caller.id,
          action: "news.delete",
          targetId: row.targetId,
          details: { id: row.id, title: row.title, author: row.authorId },
          ip: ipOf(request),
        });
        return { object: "notice", id: row.id, deleted: true };
      },
      { auth: true },
    )
    .get(
      "/dashboard/news",
      async ({ principal, tenant }) => ({
        object: "list",
        data: (await notices.feed(tenant.tenantId, ancestorsOf(principal.account), deps.clock.now(), MAX_FEED)).map(noticeRecord),
      }),
      { auth: true },
    );
}
