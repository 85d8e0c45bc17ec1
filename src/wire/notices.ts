/** Broadcast notices on the wire (spec 2.5, `/x-news`, `/dashboard/news`). */
import { Type, type Static } from "@sinclair/typebox";
import { Count, Instant, Nullable } from "./common.ts";
import { NOTICE_CONTENT_MAX, NOTICE_MAX_DAYS, NOTICE_TITLE_MAX } from "./constants.ts";

/**
 * `POST /x-news`. Title and content must also be non-empty once trimmed and within
 * their length in characters (code points, so an emoji counts once): the domain
 * checks those, as JSON Schema lengths count UTF-16 units of the untrimmed text.
 */
export const NoticeBody = Type.Object(
  {
    title: Type.String({ expected: "a non-empty string", description: `non-empty, at most ${NOTICE_TITLE_MAX} characters once trimmed` }),
    content: Type.String({ expected: "a non-empty string", description: `non-empty, at most ${NOTICE_CONTENT_MAX} characters once trimmed` }),
    /** Account ID, name or email: it and its subtree; absent or null: everyone (owners only). */
    target: Type.Optional(Type.Union([Count({ minimum: 1 }), Type.String(), Type.Null()], { expected: "an account ID, name or email" })),
    /** Days until it expires (default 30). */
    days: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: NOTICE_MAX_DAYS, expected: `an integer from 1 to ${NOTICE_MAX_DAYS}` }))),
  },
  { additionalProperties: false },
);
export type NoticeBody = Static<typeof NoticeBody>;

export const Notice = Type.Object({
  object: Type.Literal("notice"),
  id: Count(),
  title: Type.String(),
  content: Type.String(),
  /** null: system-wide. */
  target_id: Nullable(Count()),
  author_id: Count(),
  created_at: Instant(),
  expires_at: Instant(),
});
export type Notice = Static<typeof Notice>;

/** `GET /dashboard/news`: the notices addressed to the caller, newest first. */
export const NoticeFeed = Type.Object({ object: Type.Literal("list"), data: Type.Array(Notice) });
export type NoticeFeed = Static<typeof NoticeFeed>;

/** `DELETE /x-news/:id`. */
export const NoticeDeleted = Type.Object({ object: Type.Literal("notice"), id: Count(), deleted: Type.Literal(true) });
export type NoticeDeleted = Static<typeof NoticeDeleted>;
