import { createHash } from "node:crypto";
import type { ObjectKind } from "./affinity.ts";

/**
 * The affinity id of a realtime client secret: a hash of its value, never the value
 * (it is a credential). A WebSocket presenting the secret is found by the same hash.
 */
export function clientSecretId(value: string): string {
  return `ek:${createHash("sha256").update(value).digest("hex")}`;
}
import type { Endpoint } from "../formats/format.ts";

const str = (value: unknown) => (typeof value === "string" && value.length > 0 && value.length <= 256 ? value : undefined);

/**
 * The upstream objects a successful creation call made, read from its answer: a
 * response or file `id`, a video job's `request_id` (else `id`), a run's `id` and its
 * `thread_id` (POST /v1/threads/runs makes both).
 */
export function createdObjects(endpoint: Endpoint, body: unknown): Array<{ id: string; kind: ObjectKind }> {
  if (!endpoint.creates || body === null || typeof body !== "object") return [];
  const answer = body as Record<string, unknown>;
  const out: Array<{ id: string; kind: ObjectKind }> = [];
  const add = (id: string | undefined, kind: ObjectKind) => {
    if (id) out.push({ id, kind });
  };
  switch (endpoint.creates) {
    case "video":
      add(str(answer.request_id) ?? str(answer.id), "video");
      break;
    case "run":
      add(str(answer.id), "run");
      add(str(answer.thread_id), "thread");
      break;
    case "client_secret": {
      const value = typeof answer.value === "string" ? answer.value : undefined;
      add(value ? clientSecretId(value) : undefined, "client_secret");
      break;
    }
    default:
      add(str(answer.id), endpoint.creates);
  }
  return out;
}

/** The response id announced by a Responses API stream's `response.created` event. */
export function streamedResponseId(data: string): string | undefined {
  if (!data.includes('"response.created"')) return undefined;
  try {
    const event = JSON.parse(data) as { type?: string; response?: { id?: unknown } };
    return event.type === "response.created" ? str(event.response?.id) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The objects one event of a creation call's stream announces: a Responses stream's
 * `response.created`; an Assistants run stream's `thread.created` (create-and-run
 * makes the thread too) and `thread.run.created` (the run and its thread).
 */
export function streamedObjects(endpoint: Endpoint, event: { event?: string; data: string }): Array<{ id: string; kind: ObjectKind }> {
  if (endpoint.creates === "response") {
    const id = streamedResponseId(event.data);
    return id ? [{ id, kind: "response" }] : [];
  }
  if (endpoint.creates !== "run" && endpoint.creates !== "thread") return [];
  if (event.event !== "thread.created" && event.event !== "thread.run.created") return [];
  let body: unknown;
  try {
    body = JSON.parse(event.data);
  } catch {
    return [];
  }
  if (body === null || typeof body !== "object") return [];
  const object = body as Record<string, unknown>;
  if (event.event === "thread.created") {
    const id = str(object.id);
    return id ? [{ id, kind: "thread" }] : [];
  }
  return createdObjects({ ...endpoint, creates: "run" }, object);
}

/** Non-token quantities a priced answer reports: images made, seconds of audio. */
export function answerQuantities(body: unknown): Record<string, number> | undefined {
  if (body === null || typeof body !== "object") return undefined;
  const answer = body as { data?: unknown; usage?: { type?: string; seconds?: unknown }; duration?: unknown };
  const out: Record<string, number> = {};
  if (Array.isArray(answer.data)) out.images = answer.data.length;
  const seconds = answer.usage?.type === "duration" ? answer.usage.seconds : answer.duration;
  if (typeof seconds === "number" && Number.isFinite(seconds) && seconds >= 0) out.seconds = seconds;
  return Object.keys(out).length ? out : undefined;
}
