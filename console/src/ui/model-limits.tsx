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

/** Errors per row: the pattern, then the first bad member. */
export function limitRowErrors(rows: LimitRow[]): Array<string | undefined> {
  const seen = new Set<string>();
  return rows.map((row) => {
    const p = patternError(row.pattern);
    if (p) return p;
    if (seen.has(row.pattern.trim())) return "This pattern already has a row";
    seen.add(row.pattern.trim());
    for (const m of MODEL_LIMIT_MEMBERS) {
      const text = row[m].trim();
      if (text && !(/^\d+$/.test(text) && Number.isSafeInteger(Number(text)))) return `${m.toUpperCase()} must be a whole number ≥ 0`;
    }
    return undefined;
  });
}

/** Per-model limits: a pattern and up to six integer limits per row (empty = not limited here). */
export function ModelLimitsEditor(props: { name: string; rows: LimitRow[]; onChange: (rows: LimitRow[]) => void; bounds?: ModelLimits }) {
  const { rows, onChange } = props;
  const errors = limitRowErrors(rows);
  const set = (i: number, row: LimitRow) => onChange(rows.map((r, j) => (j === i ? row : r)));
  const blank = { pattern: "", ...Object.fromEntries(MODEL_LIMIT_MEMBERS.map((m) => [m, ""])) } as LimitRow;
  return (
    <div class="model-limits">
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
                      aria-label={`Model pattern, row ${i + 1}`}
                      value={row.pattern}
                      spellcheck={false}
                      aria-invalid={errors[i] ? true : undefined}
                      onInput={(e) => set(i, { ...row, pattern: (e.currentTarget as HTMLInputElement).value })}
                    />
                    {errors[i] && <div class="error-text">{errors[i]}</div>}
                  </td>
                  {MODEL_LIMIT_MEMBERS.map((m) => (
                    <td key={m}>
                      <input
                        aria-label={`${m.toUpperCase()}, row ${i + 1}`}
                        inputMode="numeric"
                        size={7}
                        value={row[m]}
                        placeholder={props.bounds?.[row.pattern]?.[m] !== undefined ? `≤ ${props.bounds[row.pattern]![m]}` : ""}
                        onInput={(e) => set(i, { ...row, [m]: (e.currentTarget as HTMLInputElement).value })}
                      />
                    </td>
                  ))}
                  <td>
                    <button type="button" class="icon" aria-label={`Remove row ${i + 1}`} onClick={() => onChange(rows.filter((_, j) => j !== i))}>
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
        <button type="button" onClick={() => onChange([...rows, blank])}>
          + Add model limit
        </button>
      </div>
    </div>
  );
}
