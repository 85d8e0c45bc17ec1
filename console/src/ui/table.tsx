import type { ComponentChildren, VNode } from "preact";
import { Fragment } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { Empty } from "./feedback.tsx";

export interface Column<T> {
  label: string;
  /** Cell content; default: the row's member of the same name. */
  render?: (row: T) => ComponentChildren;
  numeric?: boolean;
  /** What the column sorts by; default: the cell's text (numbers as numbers in numeric columns). */
  sortValue?: (row: T) => string | number | null | undefined;
  /** False for columns that make no sense to sort (actions). */
  sortable?: boolean;
  /**
   * A column a narrow screen (a phone) leaves out of the row: it is shown in the row's
   * detail, opened by the row's "More" button, so the columns that matter stay readable.
   */
  detail?: boolean;
}

/** The text a rendered cell shows, read from its virtual nodes (strings, numbers, nested children). */
export function textOf(node: ComponentChildren): string {
  if (node === null || node === undefined || typeof node === "boolean") return "";
  if (typeof node === "string" || typeof node === "number" || typeof node === "bigint") return String(node);
  if (Array.isArray(node)) return node.map(textOf).join("");
  const props = (node as VNode<{ children?: ComponentChildren }>).props;
  return props && "children" in props ? textOf(props.children) : "";
}

/** A number from a cell's text ("1,234.5", "-0.0300", "< 0.0001"); undefined when it holds none. */
const numberIn = (text: string): number | undefined => {
  const match = /-?[\d,]*\.?\d+/.exec(text);
  if (!match) return undefined;
  const n = Number(match[0].replace(/,/g, ""));
  return Number.isFinite(n) ? n : undefined;
};

type Direction = "ascending" | "descending";

/**
 * Whether a table's box has columns to scroll to, followed as the window and the table
 * change size. Only then is the box a Tab stop (to scroll it with the arrow keys): a
 * table that fits would be one more stop that does nothing.
 */
function useSidewaysScroll(shown: boolean) {
  const ref = useRef<HTMLDivElement>(null);
  const [scrolls, setScrolls] = useState(false);
  useEffect(() => {
    const box = ref.current;
    if (!box) return;
    const check = () => setScrolls(box.scrollWidth > box.clientWidth);
    check();
    const observer = new ResizeObserver(check);
    observer.observe(box);
    if (box.firstElementChild) observer.observe(box.firstElementChild);
    return () => observer.disconnect();
  }, [shown]);
  return { ref, scrolls };
}

/**
 * A table in a horizontally scrolling region, with a caption for screen readers and an
 * empty state. Clicking a column's header sorts the rows shown by it (again: the other
 * way); a paged list sorts the page it shows.
 */
export function DataTable<T>(props: { caption: string; columns: Column<T>[]; rows: T[]; empty: ComponentChildren; rowKey: (row: T) => string | number }) {
  const [sort, setSort] = useState<{ label: string; direction: Direction } | undefined>(undefined);
  const [opened, setOpened] = useState<ReadonlySet<string | number>>(new Set());
  const box = useSidewaysScroll(props.rows.length > 0);
  if (props.rows.length === 0) return <Empty>{props.empty}</Empty>;
  const cellOf = (c: Column<T>, row: T) => (c.render ? c.render(row) : String((row as Record<string, unknown>)[c.label] ?? ""));
  const sortable = (c: Column<T>) => c.sortable !== false && c.label !== "Actions";
  const keyOf = (c: Column<T>, row: T): string | number | undefined => {
    if (c.sortValue) return c.sortValue(row) ?? undefined;
    const text = textOf(cellOf(c, row)).trim();
    return c.numeric ? numberIn(text) : text.toLowerCase();
  };
  let rows = props.rows;
  const column = sort && props.columns.find((c) => c.label === sort.label);
  if (sort && column) {
    const sign = sort.direction === "ascending" ? 1 : -1;
    const keyed = props.rows.map((row, index) => ({ row, index, key: keyOf(column, row) }));
    keyed.sort((a, b) => {
      // Empty cells last, whichever way; ties keep the server's order.
      if (a.key === undefined || a.key === "") return b.key === undefined || b.key === "" ? a.index - b.index : 1;
      if (b.key === undefined || b.key === "") return -1;
      const order = typeof a.key === "number" && typeof b.key === "number" ? a.key - b.key : String(a.key).localeCompare(String(b.key));
      return order === 0 ? a.index - b.index : sign * order;
    });
    rows = keyed.map((k) => k.row);
  }
  const details = props.columns.filter((c) => c.detail);
  const open = (key: string | number) => {
    const next = new Set(opened);
    if (!next.delete(key)) next.add(key);
    setOpened(next);
  };
  const columnClass = (c: Column<T>) => [c.numeric && "num", c.detail && "detail-col"].filter(Boolean).join(" ") || undefined;
  const toggle = (label: string) =>
    setSort(sort?.label === label ? { label, direction: sort.direction === "ascending" ? "descending" : "ascending" } : { label, direction: "ascending" });
  return (
    <div class="table-wrap" role="region" aria-label={props.caption} ref={box.ref} tabIndex={box.scrolls ? 0 : undefined}>
      <table>
        <caption class="sr-only">{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((c) => {
              const current = sort?.label === c.label ? sort.direction : undefined;
              return (
                <th scope="col" class={columnClass(c)} key={c.label} aria-sort={sortable(c) ? (current ?? "none") : undefined}>
                  {sortable(c) ? (
                    <button type="button" class="sort" onClick={() => toggle(c.label)}>
                      {c.label}
                      <span aria-hidden="true">{current === "ascending" ? " ▲" : current === "descending" ? " ▼" : ""}</span>
                    </button>
                  ) : (
                    c.label
                  )}
                </th>
              );
            })}
            {details.length > 0 && (
              <th scope="col" class="more-col">
                <span class="sr-only">Details</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => {
            const key = props.rowKey(row);
            const isOpen = opened.has(key);
            return (
              <Fragment key={key}>
                <tr>
                  {props.columns.map((c) => (
                    <td class={columnClass(c)} data-label={c.label} key={c.label}>
                      {cellOf(c, row)}
                    </td>
                  ))}
                  {details.length > 0 && (
                    <td class="more-col">
                      <button type="button" aria-expanded={isOpen} aria-label={`More about row ${key}`} onClick={() => open(key)}>
                        {isOpen ? "Less" : "More"}
                      </button>
                    </td>
                  )}
                </tr>
                {details.length > 0 && isOpen && (
                  <tr class="row-detail">
                    <td colSpan={props.columns.length + 1}>
                      <dl class="info">
                        {details.map((c) => (
                          <Fragment key={c.label}>
                            <dt>{c.label}</dt>
                            <dd>{cellOf(c, row)}</dd>
                          </Fragment>
                        ))}
                      </dl>
                    </td>
                  </tr>
                )}
              </Fragment>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** Previous/next page buttons and "page N of M (T items)". */
export function Pager(props: { page: number; pages: number; total?: number; hasMore?: boolean; onPage: (page: number) => void; label: string }) {
  const last = props.hasMore === undefined ? props.page >= props.pages : !props.hasMore;
  // A page past the end (its last row just deleted) goes back to the last page there is,
  // rather than showing an empty list as if there were nothing at all.
  const past = props.total !== undefined && props.page > 1 && props.page > props.pages;
  useEffect(() => {
    if (past) props.onPage(Math.max(props.pages, 1));
  }, [past, props.pages]);
  const where = `Page ${props.page}${props.pages > 0 ? ` of ${props.pages}` : ""}`;
  // Only a change of page is announced: the count also changes with every call the
  // Requests live tail adds, and announcing that would talk over the reader every few seconds.
  const [announced, setAnnounced] = useState("");
  const lastPage = useRef(props.page);
  useEffect(() => {
    if (lastPage.current === props.page) return;
    lastPage.current = props.page;
    // Worded apart from the visible text, which it would otherwise duplicate for text searches.
    setAnnounced(`Showing page ${props.page}${props.pages > 0 ? ` of ${props.pages}` : ""}`);
  }, [props.page]);
  return (
    <nav class="pager" aria-label={`${props.label} pages`}>
      <button type="button" disabled={props.page <= 1} onClick={() => props.onPage(props.page - 1)}>
        ← Previous
      </button>
      <span>
        {where}
        {props.total !== undefined && ` (${props.total} in all)`}
      </span>
      <span class="sr-only" aria-live="polite">
        {announced}
      </span>
      <button type="button" disabled={last} onClick={() => props.onPage(props.page + 1)}>
        Next →
      </button>
    </nav>
  );
}
