import { useState } from "preact/hooks";
import { api } from "../lib/api.ts";
import { describeError } from "../ui/feedback.tsx";
import type { KeyTestResult } from "../lib/types.ts";


/** The Test button of a key's row and its outcome, shown in the row. */
export function KeyTest(props: { id: number; label: string }) {
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<KeyTestResult | null>(null);
  const [error, setError] = useState<unknown>(null);
  const run = async () => {
    setBusy(true);
    setResult(null);
    setError(null);
    try {
      setResult((await api.post<KeyTestResult>(`/x-keys/${props.id}/test`)).data);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" aria-label={`Test ${props.label}`} disabled={busy} onClick={() => void run()}>
        {busy ? "Testing…" : "Test"}
      </button>
      <p class={`key-test ${result?.ok ? "ok-text" : result || error ? "error-text" : ""}`} role="status" data-testid={`key-test-${props.id}`}>
        {result && `${result.ok ? "OK" : "Failed"}${result.status === null ? " (no answer)" : ` (${result.status})`}: ${result.message}`}
        {error ? `Test not run: ${describeError(error)}` : null}
      </p>
    </>
  );
}
