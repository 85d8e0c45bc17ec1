import type { ComponentChildren } from "preact";
import { Empty } from "./feedback.tsx";

export interface Column<T> {
  label: string;
  /** Cell content; default: the row's member of the same name. */
  render?: (row: T) => ComponentChildren;
  numeric?: boolean;
}

/** A table in a horizontally scrolling region, with a caption for screen readers and an empty state. */
export function DataTable<T>(props: { caption: string; columns: Column<T>[]; rows: T[]; empty: ComponentChildren; rowKey: (row: T) => string | number }) {
  if (props.rows.length === 0) return <Empty>{props.empty}</Empty>;
  return (
    <div class="table-wrap" role="region" aria-label={props.caption} tabIndex={0}>
      <table>
        <caption class="sr-only">{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th scope="col" class={c.numeric ? "num" : undefined} key={c.label}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr key={props.rowKey(row)}>
              {props.columns.map((c) => (
                <td class={c.numeric ? "num" : undefined} data-label={c.label} key={c.label}>
                  {c.render ? c.render(row) : String((row as Record<string, unknown>)[c.label] ?? "")}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Previous/next page buttons and "page N of M (T items)". */
export function Pager(props: { page: number; pages: number; total?: number; hasMore?: boolean; onPage: (page: number) => void; label: string }) {
  const last = props.hasMore === undefined ? props.page >= props.pages : !props.hasMore;
  return (
    <nav class="pager" aria-label={`${props.label} pages`}>
      <button type="button" disabled={props.page <= 1} onClick={() => props.onPage(props.page - 1)}>
        ← Previous
      </button>
      <span aria-live="polite">
        Page {props.page}
        {props.pages > 0 && ` of ${props.pages}`}
        {props.total !== undefined && ` (${props.total} in all)`}
      </span>
      <button type="button" disabled={last} onClick={() => props.onPage(props.page + 1)}>
        Next →
      </button>
    </nav>
  );
}
