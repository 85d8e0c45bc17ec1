import { useState } from "preact/hooks";
import { api } from "../lib/api.ts";
import { storeKey } from "../lib/session.ts";
import type { AccountStatus } from "../lib/types.ts";
import { ErrorNote } from "../ui/feedback.tsx";

/**
 * Paste the API key; it is tried against /dashboard/status (as the bearer header)
 * and kept in sessionStorage only when the router accepts it.
 */
export function Login(props: { reason?: string | null; onLogin: (status: AccountStatus) => void }) {
  const [key, setKey] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    const trimmed = key.trim();
    if (!trimmed) return setError(new Error("Paste your API key first."));
    setBusy(true);
    setError(null);
    try {
      const { data } = await api.get<AccountStatus>("/dashboard/status", { key: trimmed });
      storeKey(trimmed);
      setKey("");
      props.onLogin(data);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="login">
      <h1>Router console</h1>
      <form onSubmit={submit} class="card">
        <h2>Sign in with your API key</h2>
        {props.reason && (
          <div class="note warn" role="alert">
            {props.reason}
          </div>
        )}
        <div class="field">
          <label for="api-key">API key</label>
          <input
            id="api-key"
            name="api-key"
            type="password"
            autoComplete="off"
            spellcheck={false}
            value={key}
            placeholder="sk-rt-…"
            aria-describedby="api-key-hint"
            onInput={(e) => setKey((e.currentTarget as HTMLInputElement).value)}
          />
          <div class="hint" id="api-key-hint">
            Kept only in this tab (sessionStorage) until you close it or log out, and sent only to this router in the Authorization header.
          </div>
        </div>
        <ErrorNote error={error} />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Checking…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
