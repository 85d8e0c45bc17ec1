import type { Principal } from "../accounts/principal.ts";
import type { Admission } from "../metering/admission.ts";
import type { ModelRoute } from "../routing/route-model.ts";
import type { ClientCall } from "./call.ts";
import type { Usage, UsageSource } from "./usage/types.ts";

/**
 * What a model call is and how it ended: the relay and delivery speak these types, so
 * neither imports the other's, and every end of a call is settled in one shape.
 */

/** A call on its way upstream, as the relay receives it. */
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
}

/** How one call ended, as metered: where it was served, with what status and usage. */
export interface CallOutcome {
  /** Where it went: effective model, Level and key (as far as it got). */
  route: { effectiveModel?: string; level?: number; keyId?: number };
  status: number;
  usage: Usage;
  source: UsageSource;
  /** When the call started (ms). */
  started: number;
  /** The quantities of an answered call priced per unit (images, seconds), when it was answered. */
  extra?: Record<string, number>;
}

/** Settles a call: metering charges it and its usage row is recorded. */
export type Settle = (input: RelayInput, outcome: CallOutcome) => void;
