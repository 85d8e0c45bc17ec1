import { useState } from "preact/hooks";
import { api } from "../lib/api.ts";
import type { AccountRecord, LimitField } from "../lib/types.ts";
import { ipListError, isEmail, modelListError, resourcesError } from "../lib/validate.ts";
import { ACCOUNT_NAME_RULE, isValidAccountName } from "../../../src/accounts/validation.ts";
import { ErrorNote, serverFieldError } from "../ui/feedback.tsx";
import { TextArea, TextField } from "../ui/field.tsx";
import { fromLimitRows, limitRowErrors, ModelLimitsEditor, toLimitRows, type LimitRow } from "../ui/model-limits.tsx";
import { useEditorFocus } from "../ui/editor-focus.ts";
import { focusFirstInvalid } from "../ui/first-invalid.ts";
import { useAction } from "../ui/use-load.ts";
import { LIMIT_FIELDS, LimitFields, limitFieldErrors } from "./limit-fields.tsx";

const TEXT = ["Email", "Name", "Alias", "BillingEmail", "Rates", "AllowIPs", "AllowModels", "Resources"] as const;
type TextName = (typeof TEXT)[number];

const str = (v: unknown) => (v === null || v === undefined ? "" : String(v));

/** The body to send: every filled field on create; on edit only what changed (empty clears). */
function buildBody(r: AccountRecord | undefined, text: Record<TextName, string>, limits: Record<LimitField, string>, rows: LimitRow[], credit: string, days: string) {
  const body: Record<string, unknown> = {};
  for (const f of TEXT) {
    const v = text[f].trim();
    if (r && v === str(r[f])) continue;
    if (!r && v === "") continue;
    if (f === "Rates") {
      if (v !== "") body.Rates = Number(v);
    }
    else if (v === "" && (f === "Alias" || f === "BillingEmail")) body[f] = null;
    else if (v !== "" || (f !== "Email" && f !== "Name")) body[f] = v;
  }
  for (const f of LIMIT_FIELDS) {
    const v = limits[f].trim();
    if (r ? v === str(r[f]) : v === "") continue;
    body[f] = v === "" ? null : Number(v);
  }
  const modelLimits = fromLimitRows(rows);
  if (r ? JSON.stringify(modelLimits) !== JSON.stringify(r.ModelLimits ?? {}) : rows.length > 0) body.ModelLimits = modelLimits;
  if (credit.trim()) body.CreditGranted = Number(credit);
  if (days.trim()) body.Days = Number(days);
  return body;
}

/** The body fields this form shows the server's refusal of next to themselves. */
const ATTACHED = ["Email", "Name", "BillingEmail", "CreditGranted", "Days", "Rates", "AllowIPs", "AllowModels", "Resources", ...LIMIT_FIELDS];

/** Create or edit an account with every field of spec 2.2, the caller's bounds shown beside the limits. */
export function AccountForm(props: { record?: AccountRecord; bounds: AccountRecord; onDone: (message: string, key?: string) => void; onCancel: () => void }) {
  const heading = useEditorFocus<HTMLHeadingElement>();
  const r = props.record;
  const { bounds } = props;
  const [text, setText] = useState(() => Object.fromEntries(TEXT.map((f) => [f, r ? str(r[f]) : ""])) as Record<TextName, string>);
  const [limits, setLimits] = useState(() => Object.fromEntries(LIMIT_FIELDS.map((f) => [f, r ? str(r[f]) : ""])) as Record<LimitField, string>);
  const [rows, setRows] = useState<LimitRow[]>(() => toLimitRows(r?.ModelLimits));
  const [credit, setCredit] = useState("");
  const [days, setDays] = useState("");
  const [tried, setTried] = useState(false);
  const action = useAction();
  const set = (f: TextName) => (v: string) => setText({ ...text, [f]: v });
  const rates = Number(text.Rates);
  const errors: Record<string, string | undefined> = {
    Email: !r && !text.Email.trim() ? "Required" : text.Email.trim() && !isEmail(text.Email) ? "Not a valid email address" : undefined,
    Name: text.Name.trim() && !isValidAccountName(text.Name.trim()) ? ACCOUNT_NAME_RULE : undefined,
    BillingEmail: text.BillingEmail.trim() && !isEmail(text.BillingEmail) ? "Not a valid email address" : undefined,
    Rates: text.Rates.trim() && (!(rates > 0) ? "A number greater than 0" : rates < bounds.Rates ? `Not below your own multiplier (${bounds.Rates})` : undefined),
    AllowIPs: ipListError(text.AllowIPs),
    AllowModels: modelListError(text.AllowModels),
    Resources: resourcesError(text.Resources),
    credit: credit.trim() && (!Number.isFinite(Number(credit)) || Number(credit) === 0 || Math.abs(Number(credit)) > 1e6) ? "A non-zero number up to 1,000,000" : undefined,
    days: days.trim() && !(/^\d+$/.test(days) && Number(days) >= 1) ? "A whole number of days ≥ 1" : undefined,
  };
  const valid = !Object.values(errors).some(Boolean) && Object.keys(limitFieldErrors(limits, bounds)).length === 0 && limitRowErrors(rows).every((e) => !e);
  // An edit with nothing to send has nothing to save (a creation always has: the account).
  const changed = !r || Object.keys(buildBody(r, text, limits, rows, credit, days)).length > 0;
  const submit = (event: Event) => {
    event.preventDefault();
    setTried(true);
    if (!valid) return focusFirstInvalid(event.currentTarget as HTMLFormElement);
    void action.run(async () => {
      const body = buildBody(r, text, limits, rows, credit, days);
      if (r) {
        if (Object.keys(body).length === 0) return props.onDone("Nothing changed.");
        const { data } = await api.put<AccountRecord>(`/x-users/${r.ID}`, body);
        props.onDone(`Account ${data.Name} (ID ${data.ID}) saved.`);
      } else {
        const { data } = await api.post<AccountRecord>("/x-users", body);
        props.onDone(`Account ${data.Name} (ID ${data.ID}) created.`, data.APIKey);
      }
    });
  };
  const yours = (v: string) => `Yours: ${v || "unrestricted"}`;
  return (
    <form class="card" onSubmit={submit} aria-labelledby="acct-form-h" noValidate>
      <h3 id="acct-form-h" ref={heading} tabIndex={-1} class="editor-title">{r ? `Edit account ${r.Name} (ID ${r.ID})` : "Create an account"}</h3>
      <fieldset>
        <legend>Identity</legend>
        <div class="grid">
          <TextField label="Email" type="email" required={!r} value={text.Email} onInput={set("Email")} error={errors.Email ?? serverFieldError(action.error, "Email")} />
          <TextField label="Name" value={text.Name} onInput={set("Name")} hint={r ? undefined : "Empty: made from the email"} error={errors.Name ?? serverFieldError(action.error, "Name")} />
          <TextField label="Alias" value={text.Alias} onInput={set("Alias")} hint="Display name" />
          <TextField label="Billing email" type="email" value={text.BillingEmail} onInput={set("BillingEmail")} hint="Warning mails go here (else to the email)" error={errors.BillingEmail ?? serverFieldError(action.error, "BillingEmail")} />
        </div>
      </fieldset>
      <fieldset>
        <legend>Credit and price</legend>
        <div class="grid">
          <TextField label={r ? "Credit to add or deduct" : "Initial credit"} inputMode="decimal" value={credit} onInput={setCredit} hint={r ? "Positive adds, negative deducts (returned to you)" : "Transferred from your balance (owners mint it)"} error={errors.credit ?? serverFieldError(action.error, "CreditGranted")} />
          <TextField label="Credit valid for (days)" inputMode="numeric" value={days} onInput={setDays} hint="Empty: the credit keeps its expiry" error={errors.days ?? serverFieldError(action.error, "Days")} />
          <TextField label="Price multiplier (Rates)" inputMode="decimal" value={text.Rates} onInput={set("Rates")} hint={`Yours: ${bounds.Rates}. ${r ? "" : "Empty: yours."}`} error={errors.Rates ?? serverFieldError(action.error, "Rates")} />
        </div>
      </fieldset>
      <fieldset>
        <legend>Limits</legend>
        <LimitFields values={limits} onChange={setLimits} bounds={bounds} creating={!r} serverError={action.error} />
      </fieldset>
      <fieldset>
        <legend>Per-model limits</legend>
        {Object.keys(bounds.ModelLimits ?? {}).length > 0 && <p class="hint">Yours: {JSON.stringify(bounds.ModelLimits)}; each of your entries is kept at or below your values.</p>}
        <ModelLimitsEditor name="account-limits" rows={rows} onChange={setRows} bounds={bounds.ModelLimits} />
      </fieldset>
      <fieldset>
        <legend>Access</legend>
        <TextField label="Allowed IPs" value={text.AllowIPs} onInput={set("AllowIPs")} placeholder="10.0.0.0/8, 192.0.2.7" hint={`Comma-separated addresses or CIDR ranges; empty: any. ${yours(bounds.AllowIPs)}`} error={errors.AllowIPs ?? serverFieldError(action.error, "AllowIPs")} />
        <TextField label="Allowed models" value={text.AllowModels} onInput={set("AllowModels")} placeholder="gpt-4o*, claude-*" hint={`Comma-separated patterns; empty: any. ${yours(bounds.AllowModels)}`} error={errors.AllowModels ?? serverFieldError(action.error, "AllowModels")} />
        <TextArea label="Allowed API paths (Resources)" rows={2} value={text.Resources} onInput={set("Resources")} hint={`Empty: ${r ? "unrestricted" : "the default set"}. Add /x-users*,/x-dna*,/x-bill,/x-news* to let this account manage its own accounts. ${yours(bounds.Resources)}`} error={errors.Resources ?? serverFieldError(action.error, "Resources")} />
      </fieldset>
      {tried && !valid && (
        <p class="error-text" role="alert">
          Fix the fields marked above.
        </p>
      )}
      <ErrorNote error={action.error} attached={ATTACHED} />
      <div class="actions">
        <button type="submit" class="primary" disabled={action.busy || !changed}>
          {r ? "Save account" : "Create account"}
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
