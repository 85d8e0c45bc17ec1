import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { AccountStatus } from "../lib/types.ts";

export interface ConsoleContext {
  status: AccountStatus;
  /** Reads /dashboard/status again (balance after credit changes, after key rotation). */
  refreshStatus: () => Promise<void>;
}

export const StatusContext = createContext<ConsoleContext | null>(null);

export function useConsole(): ConsoleContext {
  const value = useContext(StatusContext);
  if (!value) throw new Error("useConsole outside the console shell");
  return value;
}
