import { useState } from "preact/hooks";
import { api } from "../lib/api.ts";
import { isEmail } from "../lib/validate.ts";
import type { TestMailResult } from "../lib/types.ts";
import { ErrorNote, serverFieldError, Success } from "../ui/feedback.tsx";
import { TextField } from "../ui/field.tsx";
import { useAction } from "../ui/use-load.ts";
import { putConfig, resetConfig, type Configs } from "./config-api.ts";

const ITEMS = ["XAI_MAIL", "EMAIL_SMTP", "EMAIL_PORT", "EMAIL_AUTH", "EMAIL_PASS"] as const;
type Item = (typeof ITEMS)[number];
/** How GET /x-config shows a stored EMAIL_PASS; written back it keeps the stored password. */
const MASK = "********";

const initialValues = (c: Configs) => Object.fromEntries(ITEMS.map((i) => [i, c[i] === undefined || c[i] === null ? "" : String(c[i])])) as Record<Item, string>;

/** SMTP settings for soft-limit mails, and a test mail through them. */
export function MailSettings({ configs }: { configs: Configs }) {
  const [saved, setSaved] = useState(() => initialValues(configs));
  const [values, setValues] = useState(saved);
  const [to, setTo] = useState("");
  const save = useAction();
  const test = useAction();
  const set = (item: Item) => (value: string) => setValues({ ...values, [item]: value });
  const errors: Partial<Record<Item | "to", string>> = {
    XAI_MAIL: values.XAI_MAIL && !isEmail(values.XAI_MAIL) ? "Not an email address" : undefined,
    EMAIL_SMTP: values.EMAIL_SMTP && !/^[A-Za-z0-9.-]+$|^\[?[0-9a-fA-F:.]+\]?$/.test(values.EMAIL_SMTP.trim()) ? "A host name or address" : undefined,
    EMAIL_PORT: values.EMAIL_PORT && !(/^\d+$/.test(values.EMAIL_PORT) && Number(values.EMAIL_PORT) >= 1 && Number(values.EMAIL_PORT) <= 65535) ? "A port from 1 to 65535" : undefined,
    to: to && !isEmail(to) ? "Not an email address" : undefined,
  };
  const changed = ITEMS.filter((i) => values[i] !== saved[i]);
  const submit = (event: Event) => {
    event.preventDefault();
    void save.run(async () => {
      const put: Configs = {};
      const cleared: string[] = [];
      for (const item of changed) {
        if (values[item].trim() === "") cleared.push(item);
        else put[item] = item === "EMAIL_PASS" ? values[item] : values[item].trim();
      }
      let next: Configs | undefined;
      if (Object.keys(put).length) next = await putConfig(put);
      if (cleared.length) next = await resetConfig(cleared);
      const fresh = initialValues(next ?? configs);
      setSaved(fresh);
      setValues(fresh);
      return `Saved ${changed.join(", ")}.`;
    });
  };
  const sendTest = () =>
    test.run(async () => {
      const { data } = await api.post<TestMailResult>("/x-config/test-mail", to.trim() ? { to: to.trim() } : {});
      return `Test mail sent to ${data.to}. The server answered: ${data.response}`;
    });
  return (
    <section class="card" aria-labelledby="mail-h">
      <h3 id="mail-h">Mail settings</h3>
      <form onSubmit={submit} noValidate>
        <div class="grid">
          <TextField label="Sender address (XAI_MAIL)" type="email" value={values.XAI_MAIL} onInput={set("XAI_MAIL")} error={errors.XAI_MAIL ?? serverFieldError(save.error, "XAI_MAIL")} />
          <TextField label="SMTP server (EMAIL_SMTP)" value={values.EMAIL_SMTP} onInput={set("EMAIL_SMTP")} placeholder="smtp.example.com" error={errors.EMAIL_SMTP ?? serverFieldError(save.error, "EMAIL_SMTP")} />
          <TextField label="Port (EMAIL_PORT)" inputMode="numeric" value={values.EMAIL_PORT} onInput={set("EMAIL_PORT")} placeholder="587" hint="465: TLS from the start; others use STARTTLS when offered" error={errors.EMAIL_PORT ?? serverFieldError(save.error, "EMAIL_PORT")} />
          <TextField label="Login (EMAIL_AUTH)" value={values.EMAIL_AUTH} onInput={set("EMAIL_AUTH")} autoComplete="off" />
          <TextField
            label="Password (EMAIL_PASS)"
            type="password"
            value={values.EMAIL_PASS}
            onInput={set("EMAIL_PASS")}
            autoComplete="new-password"
            hint={saved.EMAIL_PASS === MASK ? `A password is stored; it shows as ${MASK}. Type a new one to replace it.` : "Stored sealed; never shown again."}
          />
        </div>
        <ErrorNote error={save.error} attached={ITEMS} />
        {save.done && <Success>{save.done}</Success>}
        <button type="submit" class="primary" disabled={changed.length === 0 || Object.entries(errors).some(([k, e]) => k !== "to" && e) || save.busy}>
          Save mail settings
        </button>
      </form>
      <h3>Send a test mail</h3>
      <div class="toolbar">
        <TextField label="To" type="email" value={to} onInput={setTo} placeholder="your account's email" error={errors.to} />
        <button type="button" disabled={!!errors.to || test.busy || changed.length > 0} onClick={() => void sendTest()}>
          {test.busy ? "Sending…" : "Send test mail"}
        </button>
      </div>
      {changed.length > 0 && <p class="hint">Save the settings first; the test uses the stored ones.</p>}
      <ErrorNote error={test.error} />
      {test.done && <Success>{test.done}</Success>}
    </section>
  );
}
