import { useEffect, useRef } from "preact/hooks";
import type { Checked, Row } from "../lib/validate.ts";

type Part = "left" | "up" | "down" | "remove";

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
  const box = useRef<HTMLDivElement>(null);
  // Rows are keyed by position, so after a move, an add or a removal the focused button
  // would stay at its place and now act on another row (Enter again would move the
  // row back), or vanish with its row (focus to <body>). Focus goes where the user's row went.
  const focusNext = useRef<{ row: number; part: Part } | null>(null);
  useEffect(() => {
    const want = focusNext.current;
    if (!want || !box.current) return;
    focusNext.current = null;
    const at = (row: number, part: Part) => box.current!.querySelector<HTMLElement>(`[data-row="${row}"][data-part="${part}"]:not(:disabled)`);
    const other: Record<Part, Part> = { up: "down", down: "up", remove: "remove", left: "left" };
    (at(want.row, want.part) ?? at(want.row, other[want.part]) ?? box.current.querySelector<HTMLElement>("[data-part=add]"))?.focus();
  });
  const set = (i: number, row: Row) => onChange(rows.map((r, j) => (j === i ? row : r)));
  const move = (i: number, by: number) => {
    const next = [...rows];
    const [row] = next.splice(i, 1);
    next.splice(i + by, 0, row!);
    focusNext.current = { row: i + by, part: by < 0 ? "up" : "down" };
    onChange(next);
  };
  const remove = (i: number) => {
    // The next row's Remove (it takes this place), else the one before, else + Add row.
    focusNext.current = { row: i < rows.length - 1 ? i : i - 1, part: "remove" };
    onChange(rows.filter((_, j) => j !== i));
  };
  const add = () => {
    focusNext.current = { row: rows.length, part: "left" };
    onChange([...rows, { left: "", right: "" }]);
  };
  return (
    <div class="rows-editor" ref={box}>
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
                  data-row={i}
                  data-part="left"
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
                <button type="button" class="icon" data-row={i} data-part="up" aria-label={`Move row ${n} up`} disabled={i === 0} onClick={() => move(i, -1)}>
                  ↑
                </button>
                <button type="button" class="icon" data-row={i} data-part="down" aria-label={`Move row ${n} down`} disabled={i === rows.length - 1} onClick={() => move(i, 1)}>
                  ↓
                </button>
                <button type="button" class="icon" data-row={i} data-part="remove" aria-label={`Remove row ${n}`} onClick={() => remove(i)}>
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
      <button type="button" data-part="add" onClick={add}>
        + Add row
      </button>
    </div>
  );
}
