import type { TestRouter } from "./router.ts";

/** Shared by the owner-operations tests (issue 8): JSON requests and account creation over HTTP. */

export interface Reply {
  status: number;
  body: any;
  headers: Headers;
}

/** The documented least-privilege default Resources (docs/api.md). */
export const DEFAULT_RESOURCES = "/v1/*,/v1beta/*,/chat/completions,/responses,/embeddings,/models,/dashboard/*,/x-self,/x-pricing";
/** A manager that may also publish notices. */
export const MANAGER_RESOURCES = `${DEFAULT_RESOURCES},/x-users*,/x-dna*,/x-news*`;

/** One request; `body` is sent as JSON. `key` defaults to the owner's (null: no key). */
export async function api(
  router: TestRouter,
  path: string,
  init: { method?: string; body?: unknown; key?: string | null } = {},
): Promise<Reply> {
  const res = await router.fetch(path, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    key: init.key,
    headers: { "content-type": "application/json" },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  return { status: res.status, body, headers: res.headers };
}

let sequence = 0;

export interface CreatedAccount {
  id: number;
  name: string;
  email: string;
  key: string;
}

/** Creates an account through POST /x-users as `parentKey` (the owner by default). */
export async function createAccount(router: TestRouter, fields: Record<string, unknown> = {}, parentKey?: string): Promise<CreatedAccount> {
  const email = `ops${++sequence}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const res = await api(router, "/x-users", { body: { Email: email, ...fields }, key: parentKey });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.ID, name: res.body.Name, email: res.body.Email, key: res.body.APIKey };
}

/** One chat call for `model` as `key`, its answer read whole; its X-Request-Id (what the request log is keyed by). */
export async function chatRequestId(router: TestRouter, key: string, model: string): Promise<string> {
  const res = await router.fetch("/v1/chat/completions", {
    method: "POST",
    key,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });
  await res.text();
  return res.headers.get("x-request-id")!;
}
