import { Elysia } from "elysia";
import { readBodyBytes, parseJsonObject } from "../../http/body.ts";
import { checkModel } from "../../http/access.ts";
import { metaOf } from "../../http/context.ts";
import { authPlugin } from "../../http/plugins.ts";
import { routeModel } from "../../routing/route-model.ts";
import type { ClientCall } from "../../formats/format.ts";
import type { Endpoint } from "../../formats/format.ts";
import { forwardableRequestHeaders } from "../headers.ts";
import { startTrace } from "../trace.ts";
import { createPipeline, type PipelineDeps } from "../pipeline.ts";
import { isObject } from "../../formats/json.ts";

export const CLIENT_SECRETS_PATH = "/v1/realtime/client_secrets";

/** Minting an ephemeral client secret is not priced; the realtime session it opens is. */
export const CLIENT_SECRETS_ENDPOINT: Endpoint = {
  family: "openai",
  path: CLIENT_SECRETS_PATH,
  model: "body",
  idempotent: false,
  billing: "free",
  // The secret is bound to the account and key, so a WebSocket presenting it comes back to both.
  creates: "client_secret",
};

/**
 * `POST /v1/realtime/client_secrets`, forwarded like other OpenAI JSON calls. The model
 * sits in `session.model` (routed on it; Level 1 when absent), and that field is the
 * only edit made to the body, so no top-level `model` is ever added.
 */
export function realtimeClientSecretRoutes(deps: PipelineDeps) {
  const pipeline = createPipeline(deps);
  const encoder = new TextEncoder();
  return new Elysia().use(authPlugin(deps)).post(
    CLIENT_SECRETS_PATH,
    async ({ request, principal, tenant }) => {
      const meta = metaOf(request);
      const bytes = await readBodyBytes(request, deps.config.maxBody);
      const json = parseJsonObject(bytes);
      const session = isObject(json.session) ? json.session : undefined;
      const requested = typeof session?.model === "string" && session.model.trim() !== "" ? session.model : undefined;
      checkModel(principal, requested);
      const route = routeModel(tenant.settings.routing(), requested);
      let body = bytes;
      let sent = json;
      if (session && requested !== undefined && route.effectiveModel !== requested) {
        sent = { ...json, session: { ...session, model: route.effectiveModel } };
        body = encoder.encode(JSON.stringify(sent));
      }
      const call: ClientCall = {
        endpoint: CLIENT_SECRETS_ENDPOINT,
        method: "POST",
        family: "openai",
        requestedModel: requested,
        stream: false,
        json: sent,
        bytes: body,
        hideUsageChunk: false,
        headers: forwardableRequestHeaders(request.headers),
        search: "",
      };
      const admission = await tenant.meter.admit({
        principal,
        endpoint: CLIENT_SECRETS_ENDPOINT,
        effectiveModel: route.effectiveModel,
        json: sent,
        bodyBytes: body.byteLength,
      });
      // The attempts write a route's effective model as a top-level `model`; here it is
      // already in `session.model`, so they get the Level only.
      return pipeline.forward(tenant, {
        call,
        route: { level: route.level, effectiveModel: undefined },
        admission,
        principal,
        requestId: meta?.id ?? "",
        clientSignal: request.signal,
        trace: startTrace(request, deps.config),
      });
    },
    { auth: true },
  );
}
