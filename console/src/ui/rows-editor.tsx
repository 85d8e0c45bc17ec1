import type { Checked, Row } from "../lib/validate.ts";

/**
 * An ordered list of `<left>=<right>` rows (mappers, deployments, api versions).
 * Each input has its own label; errors from `checked` show under their input as
 * the owner types. Order matters (ties go to the earlier entry), so rows move.
 */
export function RowsEditor(props: {
  name: string;
  rows: Row[];
  onChange: (rows: Row[]) => void;
  leftLabel: string;
  rightLabel: string;
  leftPlaceholder?: string;
  rightPlaceholder?: string;
  checked?: Checked;
  rightInputMode?: "numeric" | "text";
}) {
  const { rows, onChange, checked } = props;
  const set = (i: number, row: Row) => onChange(rows.map((r, j) => (j === i ? row : r)));
  const move = (i: number, by: number) => {
    const next = [...rows];
    const [row] = next.splice(i, 1);
    next.splice(i + by, 0, row!);
    onChange(next);
  };
  return (
    <div class="rows-editor">
      {rows.length > 0 && (
        <div class="rows-head" aria-hidden="true">
          <span>{props.leftLabel}</span>
          <span>{props.rightLabel}</span>
        </div>
      )}
      <ol>
        {rows.map((row, i) => {
          const err = checked?.rows[i] ?? {};
          const n = i + 1;
          const idBase = `${props.name}-${i}`;
          return (
            <li key={i} class="row-line">
              <div class={`cell ${err.left ? "invalid" : ""}`}>
                <input
                  aria-label={`${props.leftLabel}, row ${n}`}
                  value={row.left}
                  placeholder={props.leftPlaceholder}
                  spellcheck={false}
                  aria-invalid={err.left ? true : undefined}
                  aria-describedby={err.left ? `${idBase}-l` : undefined}
                  onInput={(e) => set(i, { ...row, left: (e.currentTarget as HTMLInputElement).value })}
                />
                {err.left && (
                  <span class="error-text" id={`${idBase}-l`}>
                    {err.left}
                  </span>
                )}
              </div>
              <span class="eq" aria-hidden="true">
                =
              </span>
              <div class={`cell ${err.right ? "invalid" : ""}`}>
                <input
                  aria-label={`${props.rightLabel}, row ${n}`}
                  value={row.right}
                  placeholder={props.rightPlaceholder}
                  inputMode={props.rightInputMode}
                  spellcheck={false}
                  aria-invalid={err.right ? true : undefined}
                  aria-describedby={err.right ? `${idBase}-r` : undefined}
                  onInput={(e) => set(i, { ...row, right: (e.currentTarget as HTMLInputElement).value })}
                />
                {err.right && (
                  <span class="error-text" id={`${idBase}-r`}>
                    {err.right}
                  </span>
                )}
              </div>
              <div class="row-actions">
                <button type="button" class="icon" aria-label={`Move row ${n} up`} disabled={i === 0} onClick={() => move(i, -1)}>
                  ↑
                </button>
                <button type="button" class="icon" aria-label={`Move row ${n} down`} disabled={i === rows.length - 1} onClick={() => move(i, 1)}>
                  ↓
                </button>
                <button type="button" class="icon" aria-label={`Remove row ${n}`} onClick={() => onChange(rows.filter((_, j) => j !== i))}>
                  ✕
                </button>
              </div>
            </li>
          );
        })}
      </ol>
      {checked?.list && (
        <p class="error-text" role="alert">
          {checked.list}
        </p>
      )}
      <button type="button" onClick={() => onChange([...rows, { left: "", right: "" }])}>
        + Add row
      </button>
    </div>
  );
}
