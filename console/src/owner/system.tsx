import { useState } from "preact/hooks";
import type { ModelLimits } from "../lib/types.ts";
import { resourcesError } from "../lib/validate.ts";
import { ErrorNote, Loading, Success } from "../ui/feedback.tsx";
import { TextArea } from "../ui/field.tsx";
import { fromLimitRows, limitRowErrors, ModelLimitsEditor, toLimitRows, type LimitRow } from "../ui/model-limits.tsx";
import { useAction, useLoad } from "../ui/use-load.ts";
import { loadConfig, putConfig, resetConfig, type Configs } from "./config-api.ts";
import { MailSettings } from "./mail.tsx";

function ResourcesEditor({ initial }: { initial: string }) {
  const [value, setValue] = useState(initial);
  const [saved, setSaved] = useState(initial);
  const action = useAction();
  const error = resourcesError(value);
  const save = () =>
    action.run(async () => {
      const configs = value.trim() ? await putConfig({ RESOURCES: value }) : await resetConfig(["RESOURCES"]);
      const next = String(configs.RESOURCES ?? "");
      setValue(next);
      setSaved(next);
      return next ? "RESOURCES saved." : "RESOURCES removed: no system-wide path restriction.";
    });
  return (
    <section class="card" aria-labelledby="res-h">
      <h3 id="res-h">
        API path allowlist <code class="mono">RESOURCES</code>
      </h3>
      <TextArea
        label="Allowed API paths (comma-separated)"
        rows={3}
        value={value}
        onInput={setValue}
        placeholder="/v1/*,/dashboard/*,/x-self,/x-pricing"
        hint="Empty: no system restriction. When set, every account (owners too) is limited to these paths; owners always keep /x-config, /dashboard/status and /dashboard/info."
        error={error}
      />
      <ErrorNote error={action.error} />
      {action.done && <Success>{action.done}</Success>}
      <button type="button" class="primary" disabled={!!error || value === saved || action.busy} onClick={() => void save()}>
        Save RESOURCES
      </button>
    </section>
  );
}

function SystemLimitsEditor({ initial }: { initial: ModelLimits }) {
  const [rows, setRows] = useState<LimitRow[]>(() => toLimitRows(initial));
  const [saved, setSaved] = useState<LimitRow[]>(() => toLimitRows(initial));
  const action = useAction();
  const ok = limitRowErrors(rows).every((e) => !e);
  // Compared as the value they would save, so a row added and left empty is no change.
  const dirty = ok && JSON.stringify(fromLimitRows(rows)) !== JSON.stringify(fromLimitRows(saved));
  const save = () =>
    action.run(async () => {
      const configs = await putConfig({ MODEL_LIMITS: fromLimitRows(rows) });
      const stored = toLimitRows(configs.MODEL_LIMITS as ModelLimits);
      setRows(stored);
      setSaved(stored);
      return "MODEL_LIMITS saved.";
    });
  return (
    <section class="card" aria-labelledby="ml-h">
      <h3 id="ml-h">
        Model limits <code class="mono">MODEL_LIMITS</code>
      </h3>
      <p class="hint">
        Shared by every account, counted on the effective model (after the model mapper). RPD/TPD are per business day; RPM/RPH/TPM/TPH are sliding
        windows. Empty: no limit.
      </p>
      <ModelLimitsEditor name="system-limits" rows={rows} onChange={setRows} />
      <ErrorNote error={action.error} />
      {action.done && <Success>{action.done}</Success>}
      <button type="button" class="primary" disabled={!ok || !dirty || action.busy} onClick={() => void save()}>
        Save MODEL_LIMITS
      </button>
    </section>
  );
}

/** RESOURCES, MODEL_LIMITS and the mail settings. */
export function SystemPanel() {
  const config = useLoad(loadConfig, []);
  if (!config.data) return config.error ? <ErrorNote error={config.error} /> : <Loading />;
  const c: Configs = config.data;
  return (
    <div>
      <ResourcesEditor initial={String(c.RESOURCES ?? "")} />
      <SystemLimitsEditor initial={(c.MODEL_LIMITS as ModelLimits) ?? {}} />
      <MailSettings configs={c} />
    </div>
  );
}
