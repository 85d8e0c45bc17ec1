import type { Principal } from "../accounts/principal.ts";
import type { Admission } from "../metering/admission.ts";
import type { ReadAhead } from "./key-choice.ts";
import type { CallTrace } from "../metering/request-log.ts";
import type { ModelRoute } from "../routing/route-model.ts";
import type { ClientCall } from "../formats/format.ts";
import type { Family } from "../formats/family.ts";
import type { Translator } from "../formats/translate/translator.ts";
import type { Usage, UsageSource } from "../formats/usage.ts";

/**
 * What a model call is and how it ended, in the order the pipeline passes them on:
 * the attempts take a `RelayInput` and end with either an `Answered` upstream
 * response (delivery's to hand over) or a `Delivery` of their own (an error, a passed-on
 * client mistake, a client that left); delivery turns an `Answered` into a `Delivery`.
 * A `Delivery` carries the `CallOutcome` the pipeline settles, so no stage calls back
 * into another and the modules import only these types from each other.
 */

/** A call on its way upstream, as the attempts receive it. */
export interface RelayInput {
  call: ClientCall;
  /** Where routing sent the call (effective model and Level). */
  route: ModelRoute;
  /** Metering's admission, settled when the call ends. */
  admission: Admission;
  /** A call on an existing upstream object: only the key that holds it may serve it. */
  pinnedKeyId?: number;
  principal: Principal;
  requestId: string;
  /** Fires when the client goes away. */
  clientSignal: AbortSignal;
  /** The request log's facts: the attempts add theirs, settlement hands them on. */
  trace: CallTrace;
  /** What the first key choice reads, started while the call was admitted. */
  ahead?: ReadAhead;
}

/** Where a call was served, as far as it got. */
export interface OutcomeRoute {
  effectiveModel?: string;
  level?: number;
  keyId?: number;
}

/** How one call ended, as metered: where it was served, with what status and usage. */
export interface CallOutcome {
  route: OutcomeRoute;
  status: number;
  usage: Usage;
  source: UsageSource;
  /** When the call started (ms). */
  started: number;
  /** The quantities of an answered call priced per unit (images, seconds), when it was answered. */
  extra?: Record<string, number>;
  /**
   * Nothing was sent upstream (a request its translation refused): no usage row, like a
   * call refused before admission; the admission is still settled, at nothing.
   */
  unsent?: true;
}

/**
 * What goes back to the client, and how the call ended: known at once for a JSON
 * answer or an error, when the stream ends for a stream.
 */
export interface Delivery {
  response: Response;
  outcome: CallOutcome | Promise<CallOutcome>;
}

export type ReadResult = Awaited<ReturnType<ReadableStreamDefaultReader<Uint8Array>["read"]>>;

/** An upstream stream whose first read the attempt already awaited (and judged to be an answer). */
export interface PeekedStream {
  reader: ReadableStreamDefaultReader<Uint8Array>;
  first: ReadResult;
}

/** A JSON answer the attempt already read whole (and judged to be an answer). */
export interface ReadAnswer {
  text: string;
  parsed: unknown;
}

/** The route of an answered call: every part is known. */
export interface ServedRoute {
  effectiveModel?: string;
  level: number;
  keyId: number;
}

/** The attempt that answered, handed to delivery with what it already read. */
export interface Answered {
  response: Response;
  route: ServedRoute;
  /** When the call started (ms). */
  started: number;
  /** A stream's first event, read by the attempt. */
  peeked?: PeekedStream;
  /** A JSON answer's body, read by the attempt. */
  read?: ReadAnswer;
  /** Cuts the upstream connection. */
  controller: AbortController;
  /** Stops a client leaving from draining the upstream on the attempt's timer (a stream is drained by its relay instead). */
  detach(): void;
  /** Gives the key back to the pool. */
  release(): void;
  /**
   * The client left before the answer arrived: nobody receives it, but the upstream
   * worked, so its usage is read (within the drain time) and charged, recorded as 499.
   */
  clientLeft: boolean;
  /** Set when the key did not speak the client's format: the answer is translated back, and metered in the upstream's format. */
  translation?: { translator: Translator; upstream: Family };
}

/** How the attempts ended: an answer to deliver, or a response of their own. */
export type AttemptsEnd = { answered: Answered } | { delivery: Delivery };
