import { useEffect, useId, useRef } from "preact/hooks";
import { patternError } from "../lib/validate.ts";
import { MODEL_LIMIT_MEMBERS, type ModelLimits } from "../lib/types.ts";

export type LimitRow = { pattern: string } & Record<(typeof MODEL_LIMIT_MEMBERS)[number], string>;

export const toLimitRows = (limits: ModelLimits | null | undefined): LimitRow[] =>
  Object.entries(limits ?? {}).map(([pattern, l]) => ({
    pattern,
    ...(Object.fromEntries(MODEL_LIMIT_MEMBERS.map((m) => [m, l[m] === undefined ? "" : String(l[m])])) as Record<(typeof MODEL_LIMIT_MEMBERS)[number], string>),
  }));

export function fromLimitRows(rows: LimitRow[]): ModelLimits {
  const out: ModelLimits = {};
  for (const row of rows) {
    if (!row.pattern.trim()) continue;
    const entry: ModelLimits[string] = {};
    for (const m of MODEL_LIMIT_MEMBERS) if (row[m].trim() !== "") entry[m] = Number(row[m]);
    out[row.pattern.trim()] = entry;
  }
  return out;
}

type Member = (typeof MODEL_LIMIT_MEMBERS)[number];

/** What is wrong with a row, and in which field (so that field is the one marked and described). */
export interface RowIssue {
  field: "pattern" | Member;
  message: string;
}

/** Issues per row: the pattern, then the first bad member. */
export function limitRowIssues(rows: LimitRow[]): Array<RowIssue | undefined> {
  const seen = new Set<string>();
  return rows.map((row) => {
    const p = patternError(row.pattern);
    if (p) return { field: "pattern", message: p };
    if (seen.has(row.pattern.trim())) return { field: "pattern", message: "This pattern already has a row" };
    seen.add(row.pattern.trim());
    for (const m of MODEL_LIMIT_MEMBERS) {
      const text = row[m].trim();
      if (text && !(/^\d+$/.test(text) && Number.isSafeInteger(Number(text)))) return { field: m, message: `${m.toUpperCase()} must be a whole number ≥ 0` };
    }
    return undefined;
  });
}

/** Errors per row, in words. */
export const limitRowErrors = (rows: LimitRow[]): Array<string | undefined> => limitRowIssues(rows).map((issue) => issue?.message);

/** Per-model limits: a pattern and up to six integer limits per row (empty = not limited here). */
export function ModelLimitsEditor(props: { name: string; rows: LimitRow[]; onChange: (rows: LimitRow[]) => void; bounds?: ModelLimits }) {
  const { rows, onChange } = props;
  const issues = limitRowIssues(rows);
  const errorId = `${useId()}-limit-error-`;
  // The field an issue is about is the one marked invalid and described by the message.
  const wrong = (i: number, field: RowIssue["field"]) =>
    issues[i]?.field === field ? { "aria-invalid": true as const, "aria-describedby": `${errorId}${i}` } : {};
  const set = (i: number, row: LimitRow) => onChange(rows.map((r, j) => (j === i ? row : r)));
  const blank = { pattern: "", ...Object.fromEntries(MODEL_LIMIT_MEMBERS.map((m) => [m, ""])) } as LimitRow;
  // After + Add, focus goes to the new row's pattern; after Remove, to the next row's
  // Remove, else + Add (the button pressed is gone, and focus would fall to <body>).
  const box = useRef<HTMLDivElement>(null);
  const focusNext = useRef<string | null>(null);
  useEffect(() => {
    if (!focusNext.current || !box.current) return;
    box.current.querySelector<HTMLElement>(focusNext.current)?.focus();
    focusNext.current = null;
  });
  const add = () => {
    focusNext.current = `[data-pattern-row="${rows.length}"]`;
    onChange([...rows, blank]);
  };
  const remove = (i: number) => {
    focusNext.current = i < rows.length - 1 ? `[data-remove-row="${i}"]` : "[data-add]";
    onChange(rows.filter((_, j) => j !== i));
  };
  return (
    <div class="model-limits" ref={box}>
      {rows.length > 0 && (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Per-model limits</caption>
            <thead>
              <tr>
                <th scope="col">Model pattern</th>
                {MODEL_LIMIT_MEMBERS.map((m) => (
                  <th scope="col" key={m}>
                    {m.toUpperCase()}
                  </th>
                ))}
                <th scope="col">
                  <span class="sr-only">Remove</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row, i) => (
                <tr key={i}>
                  <td>
                    <input
                      data-pattern-row={i}
                      aria-label={`Model pattern, row ${i + 1}`}
                      value={row.pattern}
                      spellcheck={false}
                      {...wrong(i, "pattern")}
                      onInput={(e) => set(i, { ...row, pattern: (e.currentTarget as HTMLInputElement).value })}
                    />
                    {issues[i] && (
                      <div class="error-text" id={`${errorId}${i}`}>
                        {issues[i]!.message}
                      </div>
                    )}
                  </td>
                  {MODEL_LIMIT_MEMBERS.map((m) => (
                    <td key={m}>
                      <input
                        aria-label={`${m.toUpperCase()}, row ${i + 1}`}
                        inputMode="numeric"
                        size={7}
                        {...wrong(i, m)}
                        value={row[m]}
                        placeholder={props.bounds?.[row.pattern]?.[m] !== undefined ? `≤ ${props.bounds[row.pattern]![m]}` : ""}
                        onInput={(e) => set(i, { ...row, [m]: (e.currentTarget as HTMLInputElement).value })}
                      />
                    </td>
                  ))}
                  <td>
                    <button type="button" class="icon" data-remove-row={i} aria-label={`Remove row ${i + 1}`} onClick={() => remove(i)}>
                      ✕
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div class="actions">
        <button type="button" data-add onClick={add}>
          + Add model limit
        </button>
      </div>
    </div>
  );
}
