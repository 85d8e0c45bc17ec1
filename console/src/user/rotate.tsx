import { useEffect, useState } from "preact/hooks";
import { api } from "../lib/api.ts";
import type { RotatedKey } from "../lib/types.ts";
import { serverToday } from "../lib/server-date.ts";
import { storeKey } from "../lib/session.ts";
import { useConsole } from "../shell/context.ts";
import { ErrorNote, Loading } from "../ui/feedback.tsx";
import { TextField } from "../ui/field.tsx";
import { SecretOnce } from "../ui/secret-once.tsx";
import { useAction } from "../ui/use-load.ts";

/**
 * Key rotation (POST /x-self). The confirm string carries the server's date; the
 * user types it to show they mean it. The new key replaces the stored one at once,
 * since the old key stops working with the next request.
 */
export function RotatePanel() {
  const { refreshStatus } = useConsole();
  const [expected, setExpected] = useState<string | null>(null);
  const [dateError, setDateError] = useState<unknown>(null);
  const [typed, setTyped] = useState("");
  const [newKey, setNewKey] = useState<string | null>(null);
  const action = useAction();
  useEffect(() => {
    serverToday()
      .then((day) => setExpected(`${day}-ROTATE-SELF`))
      .catch(setDateError);
  }, []);
  if (dateError) return <ErrorNote error={dateError} />;
  if (!expected) return <Loading />;
  const matches = typed.trim() === expected;
  const rotate = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const { data } = await api.post<RotatedKey>("/x-self", { confirm: typed.trim() });
      storeKey(data.APIKey);
      setNewKey(data.APIKey);
      setTyped("");
      await refreshStatus();
    });
  };
  return (
    <section class="card" aria-labelledby="rotate-h">
      <h3 id="rotate-h">Replace this API key</h3>
      <p>
        A new key is issued and the current one stops working immediately, for every program that uses it. This console switches to the new
        key by itself.
      </p>
      {newKey ? (
        <SecretOnce label="Your new API key." value={newKey} onDismiss={() => setNewKey(null)} />
      ) : (
        <form onSubmit={rotate}>
          <p>
            To confirm, type <code class="mono" data-testid="rotate-confirm">{expected}</code> (today's date on the router).
          </p>
          <TextField
            label="Confirmation"
            value={typed}
            onInput={setTyped}
            error={typed && !matches && typed.length >= expected.length ? "Does not match the text above" : undefined}
          />
          <ErrorNote error={action.error} />
          <button type="submit" class="danger" disabled={!matches || action.busy}>
            Rotate key
          </button>
        </form>
      )}
    </section>
  );
}
