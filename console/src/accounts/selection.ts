import { useEffect, useState } from "preact/hooks";

/** Accounts ticked in the list, offered to the batch credit form (lives as long as the page). */
let selected: number[] = [];
const listeners = new Set<(ids: number[]) => void>();

export function setSelection(ids: number[]): void {
  selected = [...new Set(ids)].sort((a, b) => a - b);
  for (const listener of listeners) listener(selected);
}

export function toggleSelected(id: number, on: boolean): void {
  setSelection(on ? [...selected, id] : selected.filter((x) => x !== id));
}

export function useSelection(): number[] {
  const [ids, setIds] = useState(selected);
  useEffect(() => {
    listeners.add(setIds);
    return () => void listeners.delete(setIds);
  }, []);
  return ids;
}
