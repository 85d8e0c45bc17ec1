import { Elysia } from "elysia";
import { notFound } from "../core/errors.ts";
import type { ServeConfig } from "../config.ts";
import type { Affinity } from "./affinity.ts";
import { readBodyBytes, parseJsonObject } from "../http/body.ts";
import { authPlugin, type Caller, type AuthenticateDeps } from "../http/plugins.ts";
import type { ObjectKind } from "./affinity.ts";
import type { ClientCall } from "../formats/format.ts";
import type { Pipeline } from "./pipeline.ts";
import type { Endpoint } from "../formats/format.ts";
import { forwardableRequestHeaders } from "./headers.ts";
import { checkModel } from "../http/access.ts";
import { familyOfRequest } from "../formats/registry.ts";
import type { Family } from "../formats/family.ts";

/** Creation calls that carry no model: served by Level 1 (docs/api.md). */
const FILE_UPLOAD: Endpoint = { family: "openai", path: "/v1/files", model: "none", idempotent: false, billing: "free", multipart: true, creates: "file" };
const THREAD_CREATE: Endpoint = { family: "openai", path: "/v1/threads", model: "none", idempotent: true, billing: "free", creates: "thread" };
// A run spends model tokens upstream: never replayed on another key once sent.
const THREAD_RUN_CREATE: Endpoint = { family: "openai", path: "/v1/threads/runs", model: "none", idempotent: false, billing: "free", creates: "run" };

const NOT_FOUND_NAME: Record<ObjectKind, string> = {
  file: "File",
  response: "Response",
  thread: "Thread",
  run: "Run",
  video: "Video job",
  client_secret: "Client secret",
};

const FILES_API_OF: Partial<Record<Family, string>> = { anthropic: "The Anthropic Files API", gemini: "The Gemini Files API" };

/**
 * `/v1/files` is OpenAI's Files API. The Anthropic SDK (beta.files) and `@google/genai` 3.x
 * call the same path for their own, which the router does not serve: such a call (told by
 * its SDK's headers) would otherwise be taken for an OpenAI upload, sent to an OpenAI key
 * or refused as a missing Bearer key. It gets a 404 in its own envelope saying so; nothing is sent.
 */
function refuseForeignFiles(request: Request) {
  const api = FILES_API_OF[familyOfRequest(request, new URL(request.url).pathname)];
  if (api) throw notFound(`${api} is not served by this router; send files inline in the model call (base64 data or a URL)`, "unsupported_endpoint");
}

/**
 * Calls on upstream objects created through the router (files, threads and their
 * messages and runs, stored responses, video jobs). Each goes to the provider key
 * that holds the object; an object another account created does not exist for
 * the caller (404), the same answer as an unknown id.
 */
export interface ObjectRouteDeps extends AuthenticateDeps {
  readonly config: AuthenticateDeps["config"] & Pick<ServeConfig, "maxBody">;
  readonly affinity: Affinity;
}

export function objectRoutes(deps: ObjectRouteDeps, pipeline: Pipeline) {
  const owned = async ({ principal, tenant }: Caller, objectId: string, kind: ObjectKind) => {
    const bound = await deps.affinity.lookup(objectId, tenant.tenantId);
    if (!bound || bound.accountId !== principal.account.id) {
      throw notFound(`No such ${NOT_FOUND_NAME[kind]}: ${objectId}`, "object_not_found");
    }
    return bound;
  };

  /** Forwards the client's call as it is (method, path, query, body) to the object's key. */
  const onObject = async (request: Request, caller: Caller, objectId: string, kind: ObjectKind, creates?: Endpoint["creates"]) => {
    const bound = await owned(caller, objectId, kind);
    const url = new URL(request.url);
    const method = request.method;
    // A file's content is the file as stored, whatever its type: never judged as a JSON
    // answer (a stored JSON file holding an `error` member, or none at all, is still the file).
    const content = kind === "file" && url.pathname.endsWith("/content");
    const endpoint: Endpoint = { family: "openai", path: url.pathname, model: "none", idempotent: method !== "POST", billing: "free", creates, ...(content && { binary: true }) };
    const response = await pipeline.run(
      request,
      caller,
      async () => {
        const bytes = method === "GET" || method === "DELETE" ? new Uint8Array(0) : await readBodyBytes(request, deps.config.maxBody);
        const json = bytes.byteLength > 0 ? parseJsonObject(bytes) : undefined;
        // A call on an object may name a model (a run on a thread): AllowModels holds for it
        // as for create-and-run. The model is not routed or priced here (object calls are free).
        if (typeof json?.model === "string") checkModel(caller.principal, json.model);
        const call: ClientCall = {
          endpoint,
          method,
          family: "openai",
          requestedModel: undefined,
          stream: json?.stream === true,
          json,
          bytes,
          hideUsageChunk: false,
          headers: forwardableRequestHeaders(request.headers),
          search: url.search,
        };
        return call;
      },
      { pinnedKeyId: bound.keyId },
    );
    // Deleting the object itself (not a sub-resource) ends its binding.
    if (method === "DELETE" && response.ok && url.pathname.endsWith(`/${objectId}`)) await deps.affinity.forget(objectId, caller.tenant.tenantId);
    return response;
  };

  /** GET /v1/files: the caller's own files, gathered from the keys that hold them. */
  const listFiles = async (request: Request, caller: Caller) => {
    const mine = await deps.affinity.ownedBy(caller.principal.account.id, "file", caller.tenant.tenantId);
    const ids = new Set(mine.map((row) => row.objectId));
    const keys = [...new Set(mine.map((row) => row.keyId))];
    const data: unknown[] = [];
    for (const keyId of keys) {
      const anyId = mine.find((row) => row.keyId === keyId)!.objectId;
      const response = await onObject(new Request(request.url, { headers: request.headers, method: "GET", signal: request.signal }), caller, anyId, "file");
      if (!response.ok) continue;
      const page = (await response.json()) as { data?: Array<{ id?: string }> };
      for (const file of page.data ?? []) if (file.id && ids.has(file.id)) data.push(file);
    }
    return { object: "list", data, has_more: false };
  };

  const objectCall = (kind: ObjectKind) => ({ request, principal, tenant, params }: Caller & { request: Request; params: Record<string, string> }) => {
    if (kind === "file") refuseForeignFiles(request);
    return onObject(request, { principal, tenant }, params.id!, kind);
  };

  return new Elysia()
    .use(authPlugin(deps))
    .post(
      "/v1/files",
      ({ request, principal, tenant }) => {
        refuseForeignFiles(request);
        return pipeline.run(request, { principal, tenant }, pipeline.multipart(FILE_UPLOAD), { level: 1 });
      },
      { auth: true },
    )
    .get(
      "/v1/files",
      ({ request, principal, tenant }) => {
        refuseForeignFiles(request);
        return listFiles(request, { principal, tenant });
      },
      { auth: true },
    )
    .get("/v1/files/:id", objectCall("file"), { auth: true })
    .delete("/v1/files/:id", objectCall("file"), { auth: true })
    .get("/v1/files/:id/content", objectCall("file"), { auth: true })
    .post("/v1/threads", ({ request, principal, tenant }) => pipeline.run(request, { principal, tenant }, pipeline.json(THREAD_CREATE), { level: 1 }), { auth: true })
    .post("/v1/threads/runs", ({ request, principal, tenant }) => pipeline.run(request, { principal, tenant }, pipeline.json(THREAD_RUN_CREATE), { level: 1 }), {
      auth: true,
    })
    .all("/v1/threads/:id", objectCall("thread"), { auth: true })
    .post("/v1/threads/:id/runs", ({ request, principal, tenant, params }) => onObject(request, { principal, tenant }, params.id, "thread", "run"), { auth: true })
    .all("/v1/threads/:id/*", objectCall("thread"), { auth: true })
    .get("/v1/responses/:id", objectCall("response"), { auth: true })
    .delete("/v1/responses/:id", objectCall("response"), { auth: true })
    .post("/v1/responses/:id/cancel", objectCall("response"), { auth: true })
    .get("/v1/responses/:id/input_items", objectCall("response"), { auth: true })
    .get("/v1/videos/:id", objectCall("video"), { auth: true });
}
