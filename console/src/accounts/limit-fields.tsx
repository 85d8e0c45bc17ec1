import { serverFieldError } from "../ui/feedback.tsx";
import { formatLimit } from "../lib/format.ts";
import { RATE_FIELDS, SPEND_FIELDS, type AccountRecord, type LimitField } from "../lib/types.ts";
import { limitError } from "../lib/validate.ts";
import { TextField } from "../ui/field.tsx";

const LABELS: Record<LimitField, string> = {
  RPM: "Requests per minute (RPM)",
  RPH: "Requests per hour (RPH)",
  RPD: "Requests per day (RPD)",
  TPM: "Tokens per minute (TPM)",
  TPH: "Tokens per hour (TPH)",
  TPD: "Tokens per day (TPD)",
  DailyLimit: "Daily spending limit (credits)",
  HardLimit: "Monthly hard limit (credits)",
  SoftLimit: "Monthly warning threshold (credits)",
};

export const LIMIT_FIELDS = [...RATE_FIELDS, ...SPEND_FIELDS] as LimitField[];

export function limitFieldErrors(values: Record<LimitField, string>, bounds: AccountRecord): Partial<Record<LimitField, string>> {
  const out: Partial<Record<LimitField, string>> = {};
  for (const f of LIMIT_FIELDS) {
    const error = limitError(values[f], (RATE_FIELDS as readonly string[]).includes(f), bounds[f]);
    if (error) out[f] = error;
  }
  return out;
}

/** The nine limits, each with the caller's own bound beside it (a child can never exceed it). */
export function LimitFields(props: { values: Record<LimitField, string>; onChange: (values: Record<LimitField, string>) => void; bounds: AccountRecord; creating: boolean; serverError?: unknown }) {
  const errors = limitFieldErrors(props.values, props.bounds);
  return (
    <div class="grid">
      {LIMIT_FIELDS.map((f) => (
        <TextField
          key={f}
          label={LABELS[f]}
          inputMode={(RATE_FIELDS as readonly string[]).includes(f) ? "numeric" : "decimal"}
          value={props.values[f]}
          onInput={(v) => props.onChange({ ...props.values, [f]: v })}
          hint={`Your limit: ${formatLimit(props.bounds[f])}. ${props.creating ? "Empty: inherits yours." : "Empty: unlimited."}`}
          error={errors[f] ?? serverFieldError(props.serverError, f)}
        />
      ))}
    </div>
  );
}
