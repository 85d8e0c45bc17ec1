import { useEffect, useRef, useState } from "preact/hooks";
import { api, pagination, query } from "../lib/api.ts";
import type { RequestRecord } from "../lib/types.ts";

export const PAGE_SIZE = 20;
/** How often the live tail asks for new calls. */
export const TAIL_MS = 3000;
/** The live tail keeps at most this many rows on the first page (the oldest leave). */
const TAIL_KEEP = 200;

export interface RequestLog {
  rows: RequestRecord[] | undefined;
  pages: number;
  total: number;
  error: unknown;
  loading: boolean;
  /** New calls the tail saw while the user reads a later page (shown there as a count, not inserted). */
  waiting: number;
  reload: () => void;
}

const newestFirst = (a: RequestRecord, b: RequestRecord) => (a.time < b.time ? 1 : a.time > b.time ? -1 : 0);

async function fetchPage(params: Record<string, string>, page: number) {
  const { data, headers } = await api.get<RequestRecord[]>(`/x-requests${query({ ...params, page, size: PAGE_SIZE })}`);
  return { rows: data, ...pagination(headers) };
}

/**
 * Runs `change` (which adds rows above the reader's place) so that what the reader looks
 * at stays where it is: when the window is scrolled, it scrolls by the height added.
 */
function keepingPlace(change: () => void): void {
  const y = window.scrollY;
  const before = document.documentElement.scrollHeight;
  change();
  if (y <= 0) return;
  requestAnimationFrame(() => window.scrollTo(0, y + document.documentElement.scrollHeight - before));
}

/**
 * One page of the request log for `params`, and, while `live`, a tail that asks for
 * the newest calls every TAIL_MS: on the first page they are added at the top (the
 * reader's place kept), on a later page they are counted in `waiting`.
 */
export function useRequestLog(params: Record<string, string>, page: number, live: boolean): RequestLog {
  const [rows, setRows] = useState<RequestRecord[] | undefined>(undefined);
  const [pages, setPages] = useState(0);
  const [total, setTotal] = useState(0);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const [waiting, setWaiting] = useState(0);
  const [generation, setGeneration] = useState(0);
  const seen = useRef(new Set<string>());
  const key = JSON.stringify(params);

  useEffect(() => {
    let current = true;
    setLoading(true);
    setWaiting(0);
    fetchPage(params, page)
      .then((answer) => {
        if (!current) return;
        seen.current = new Set(answer.rows.map((r) => r.request_id));
        setRows(answer.rows);
        setPages(answer.pages);
        setTotal(answer.total);
        setError(null);
      })
      .catch((e) => current && setError(e))
      .finally(() => current && setLoading(false));
    return () => {
      current = false;
    };
  }, [key, page, generation]);

  useEffect(() => {
    if (!live) return;
    let current = true;
    // On a later page `seen` holds that page's rows: the first page's calls as the tail
    // starts are not new, so the first answer only marks them seen.
    let baseline = page === 1;
    const poll = async () => {
      try {
        const answer = await fetchPage(params, 1);
        if (!current) return;
        if (!baseline) {
          baseline = true;
          for (const r of answer.rows) seen.current.add(r.request_id);
          setError(null);
          return;
        }
        const fresh = answer.rows.filter((r) => !seen.current.has(r.request_id));
        setError(null);
        if (fresh.length === 0) return;
        for (const r of fresh) seen.current.add(r.request_id);
        setTotal(answer.total);
        if (page !== 1) return setWaiting((n) => n + fresh.length);
        setPages(answer.pages);
        keepingPlace(() => setRows((shown) => [...fresh, ...(shown ?? [])].sort(newestFirst).slice(0, TAIL_KEEP)));
      } catch (e) {
        if (current) setError(e);
      }
    };
    const timer = setInterval(() => void poll(), TAIL_MS);
    void poll();
    return () => {
      current = false;
      clearInterval(timer);
    };
  }, [live, key, page]);

  return { rows, pages, total, error, loading, waiting, reload: () => setGeneration((g) => g + 1) };
}
