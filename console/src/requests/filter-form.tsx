import { useState } from "preact/hooks";
import { TextField } from "../ui/field.tsx";
import { filterErrors, NO_FILTERS, type RequestFilters } from "./filters.ts";

/**
 * The filters of the request log, applied together with Apply (a half-typed account
 * name is not sent). `owner` adds the key and Level filters; `others` (owners and
 * managers) the account filter: any other account sees its own calls only.
 */
export function FilterForm(props: { value: RequestFilters; owner: boolean; others: boolean; onApply: (filters: RequestFilters) => void }) {
  const [draft, setDraft] = useState<RequestFilters>(props.value);
  const errors = filterErrors(draft);
  const set = (member: keyof RequestFilters) => (value: string) => setDraft({ ...draft, [member]: value });
  const submit = (e: Event) => {
    e.preventDefault();
    if (Object.keys(errors).length === 0) props.onApply(draft);
  };
  return (
    <form class="toolbar filters" role="search" aria-label="Filter calls" onSubmit={submit}>
      {props.others && <TextField label="Account" value={draft.account} onInput={set("account")} placeholder="ID, name or email" />}
      <TextField label="Model" value={draft.model} onInput={set("model")} placeholder="requested or effective" />
      <TextField label="Status" value={draft.status} onInput={set("status")} placeholder="429 or 5xx" error={errors.status} />
      {props.owner && <TextField label="Key ID" inputMode="numeric" value={draft.keyId} onInput={set("keyId")} error={errors.keyId} />}
      {props.owner && <TextField label="Level" inputMode="numeric" value={draft.level} onInput={set("level")} error={errors.level} />}
      <TextField label="Since" type="date" value={draft.since} onInput={set("since")} />
      <TextField label="Until" type="date" value={draft.until} onInput={set("until")} error={errors.until} />
      <TextField label="Request ID" value={draft.requestId} onInput={set("requestId")} placeholder="req_…" error={errors.requestId} />
      <div class="actions">
        <button type="submit" class="primary">
          Apply filters
        </button>
        <button type="button" onClick={() => (setDraft(NO_FILTERS), props.onApply(NO_FILTERS))}>
          Clear
        </button>
      </div>
    </form>
  );
}
