import type { Principal } from "../accounts/principal.ts";
import { badRequest, notFound } from "../core/errors.ts";
import type { Deps } from "../deps.ts";
import { readBodyBytes } from "../http/body.ts";
import { checkModel } from "../http/access.ts";
import { metaOf } from "../http/context.ts";
import { spoolMultipart } from "../http/multipart.ts";
import { routeModel, type ModelRoute } from "../routing/route-model.ts";
import { join } from "node:path";
import { bodyCall, multipartCall, type ClientCall } from "./call.ts";
import type { Endpoint } from "./endpoints.ts";
import { tenantRelays } from "./relay.ts";

/** Reads the client's call from the request (JSON, multipart or Gemini form). */
export type CallReader = (request: Request) => Promise<ClientCall>;

/**
 * The path of every model and object call after authentication: read the body
 * (bounded; multipart spooled to disk), check AllowModels, route the model, admit
 * through metering, then relay. A call on an existing upstream object goes only to
 * the key that holds it (resource affinity).
 */
export function createDispatcher(deps: Deps) {
  const relayFor = tenantRelays();
  const spoolDir = join(deps.config.dataDir, "tmp");

  /** The key a call must use when it continues an object (Responses `previous_response_id`). */
  const continuation = (principal: Principal, call: ClientCall): number | undefined => {
    const previous = call.json?.previous_response_id;
    if (call.endpoint.creates !== "response" || typeof previous !== "string") return undefined;
    const bound = deps.affinity.lookup(previous);
    if (!bound || bound.accountId !== principal.account.id) {
      throw notFound(`Previous response with id '${previous}' not found`, "previous_response_not_found");
    }
    return bound.keyId;
  };

  async function dispatch(request: Request, principal: Principal, read: CallReader, options: { pinnedKeyId?: number; level?: number } = {}) {
    const meta = metaOf(request);
    // Reasoning models may think for minutes before the first byte: the relay's own
    // timers guard upstream silence, so Bun's connection idle limit must not.
    meta?.server?.timeout(request, 0);
    const call = await read(request);
    const tenant = deps.scope(principal.account);
    try {
      checkModel(principal, call.requestedModel);
      const routed = routeModel(tenant.settings.routing(), call.requestedModel);
      const route: ModelRoute = options.level === undefined ? routed : { ...routed, level: options.level };
      if (call.form && route.effectiveModel !== call.requestedModel) {
        throw badRequest(
          `Model ${call.requestedModel} is mapped to ${route.effectiveModel}, but a multipart form's model cannot be rewritten; call ${route.effectiveModel} directly`,
          "model",
        );
      }
      const pinnedKeyId = options.pinnedKeyId ?? continuation(principal, call);
      const admission = tenant.meter.admit({
        principal,
        endpoint: call.endpoint,
        effectiveModel: route.effectiveModel,
        json: call.json,
        fields: call.form?.fields,
        bodyBytes: call.form?.size ?? call.bytes.byteLength,
      });
      return await relayFor(tenant)({ call, route, admission, principal, requestId: meta?.id ?? "", clientSignal: request.signal, pinnedKeyId });
    } finally {
      // The upstream has the body once its answer began; an unlinked file stays readable until closed.
      call.form?.remove();
    }
  }

  return {
    dispatch,
    /** A JSON call of an endpoint. */
    json: (endpoint: Endpoint): CallReader => async (request) => bodyCall(endpoint, request, await readBodyBytes(request, deps.config.maxBody)),
    /** A multipart call of an endpoint, spooled to disk. */
    multipart: (endpoint: Endpoint): CallReader => async (request) => {
      const form = await spoolMultipart(request, deps.config.maxBody, spoolDir);
      try {
        return multipartCall(endpoint, request, form);
      } catch (error) {
        // A form refused for its fields (no model, no file, a field given twice) leaves no spool file behind.
        form.remove();
        throw error;
      }
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
