import { useState } from "preact/hooks";
import { api } from "../lib/api.ts";
import type { ProviderConfig, ProviderKey, ProviderType } from "../lib/types.ts";
import { levelError, objectToRows, patternError, rowsToObject } from "../lib/validate.ts";
import { ErrorNote, serverFieldError } from "../ui/feedback.tsx";
import { CheckField, SelectField, TextField } from "../ui/field.tsx";
import { useEditorFocus } from "../ui/editor-focus.ts";
import { focusFirstInvalid } from "../ui/first-invalid.ts";
import { useAction } from "../ui/use-load.ts";
import { addLevelMapping } from "./config-api.ts";
import { AzureFields, checkPairs, describeServiceAccount, FormatsField, VertexFields, type AzureState, type VertexState } from "./key-config.tsx";
import type { KeyFormat } from "../../../src/wire/constants.ts";

/** A config as JSON with its members in name order, so a record's member order does not count as a change. */
const canonical = (config: ProviderConfig) => JSON.stringify(Object.fromEntries(Object.entries(config).sort(([a], [b]) => (a < b ? -1 : 1))));

function httpsError(url: string): string | undefined {
  if (!url.trim()) return "Enter the upstream's https:// base URL";
  try {
    const u = new URL(url.trim());
    if (u.protocol !== "https:") return "Must be an https:// URL";
    if (u.username || u.password) return "No credentials in the URL; they go in the secret";
    if (u.search || u.hash) return "A base URL, without query or fragment";
  } catch {
    return "Not a valid URL";
  }
  return undefined;
}

/** Create (record undefined) or edit a provider key of any of the three types. */
export function KeyForm(props: { record?: ProviderKey; onDone: (message: string) => void; onCancel: () => void }) {
  const heading = useEditorFocus<HTMLHeadingElement>();
  const r = props.record;
  const cfg = r?.config ?? {};
  const [name, setName] = useState(r?.Name ?? "");
  const [provider, setProvider] = useState(r?.Provider ?? "");
  const [secret, setSecret] = useState("");
  const [level, setLevel] = useState(String(r?.Level ?? 1));
  const [enabled, setEnabled] = useState(r?.Status ?? true);
  const [noSleep, setNoSleep] = useState(r?.NoSleep ?? false);
  const [type, setType] = useState<ProviderType>(cfg.provider_type ?? "standard");
  const [azure, setAzure] = useState<AzureState>({ deployments: objectToRows(cfg.deployments), apiVersions: objectToRows(cfg.api_versions) });
  const [vertex, setVertex] = useState<VertexState>({ projectId: cfg.project_id ?? "", location: cfg.location ?? "" });
  const [formats, setFormats] = useState<KeyFormat[]>(cfg.formats ?? []);
  const [pattern, setPattern] = useState("");
  const [tried, setTried] = useState(false);
  const action = useAction();

  const errors = {
    provider: httpsError(provider),
    secret:
      type === "vertex"
        ? describeServiceAccount(secret).error ?? (!r && !secret.trim() ? "Paste the key file" : undefined)
        : (!r || secret) && secret.trim().length < 20
          ? "At least 20 characters"
          : undefined,
    level: levelError(level),
    pattern: pattern.trim() ? patternError(pattern) : undefined,
  };
  const rowsOk = type !== "azure" || (checkPairs(azure.deployments, "").ok && checkPairs(azure.apiVersions, "").ok);
  const valid = !Object.values(errors).some(Boolean) && rowsOk;

  const config = (): ProviderConfig => {
    const out = typeConfig();
    if (formats.length) out.formats = formats;
    return out;
  };
  const typeConfig = (): ProviderConfig => {
    if (type === "azure") {
      const out: ProviderConfig = { provider_type: "azure" };
      if (azure.deployments.length) out.deployments = rowsToObject(azure.deployments);
      if (azure.apiVersions.length) out.api_versions = rowsToObject(azure.apiVersions);
      return out;
    }
    if (type === "vertex") {
      const out: ProviderConfig = { provider_type: "vertex", base_url: provider.trim() };
      if (vertex.projectId.trim()) out.project_id = vertex.projectId.trim();
      if (vertex.location.trim()) out.location = vertex.location.trim();
      return out;
    }
    return { provider_type: "standard" };
  };

  // An edit that changes nothing has nothing to save.
  const changed =
    !r ||
    secret !== "" ||
    name.trim() !== r.Name ||
    provider.trim() !== r.Provider ||
    level !== String(r.Level) ||
    enabled !== r.Status ||
    noSleep !== r.NoSleep ||
    canonical(config()) !== canonical({ provider_type: "standard", ...r.config });

  const submit = (event: Event) => {
    event.preventDefault();
    setTried(true);
    if (!valid) return focusFirstInvalid(event.currentTarget as HTMLFormElement);
    void action.run(async () => {
      const body: Record<string, unknown> = { Name: name.trim(), Provider: provider.trim(), Level: Number(level), Status: enabled, NoSleep: noSleep };
      if (secret) body.SecretKey = type === "vertex" ? secret : secret.trim();
      const nextConfig = config();
      if (!r || canonical(nextConfig) !== canonical({ provider_type: "standard", ...r.config })) body.config = nextConfig;
      if (!r) {
        // Answered without the secret (`fields=edit`): the console never receives it back.
        const { data } = await api.post<ProviderKey>("/x-keys?fields=edit", body);
        let message = `Key ${data.ID} added to Level ${data.Level}.`;
        if (pattern.trim()) {
          const before = await addLevelMapping(pattern.trim(), data.Level);
          message += ` LEVEL_MAPPER: ${pattern.trim()}=${data.Level}${before ? ` (was ${before})` : ""}.`;
        }
        props.onDone(message);
      } else {
        await api.put<ProviderKey>(`/x-keys/${r.ID}?fields=edit`, body);
        props.onDone(`Key ${r.ID} saved.`);
      }
    });
  };
  const show = (e: string | undefined) => (tried ? e : undefined);

  return (
    <form class="card" onSubmit={submit} aria-labelledby="key-form-h" noValidate>
      <h3 id="key-form-h" ref={heading} tabIndex={-1} class="editor-title">{r ? `Edit key ${r.ID}` : "Add a provider key"}</h3>
      <div class="grid">
        <SelectField
          label="Provider type"
          value={type}
          onChange={(t) => setType(t as ProviderType)}
          options={[
            ["standard", "Standard (API key / bearer)"],
            ["azure", "Azure OpenAI"],
            ["vertex", "Google Vertex AI"],
          ]}
        />
        <TextField label="Name" value={name} onInput={setName} placeholder="e.g. openai-main" />
        <TextField label={type === "vertex" ? "Base URL" : "Provider URL"} required value={provider} onInput={setProvider} placeholder={type === "vertex" ? "https://aiplatform.googleapis.com" : "https://api.openai.com/v1"} error={show(errors.provider) ?? (provider ? errors.provider : undefined) ?? serverFieldError(action.error, "Provider")} />
        <TextField label="Level" required inputMode="numeric" value={level} onInput={setLevel} error={errors.level ?? serverFieldError(action.error, "Level")} hint="The key group that serves the models mapped to it" />
      </div>
      {type !== "vertex" && (
        <TextField
          label="Secret key"
          type="password"
          required={!r}
          value={secret}
          onInput={setSecret}
          autoComplete="new-password"
          hint={r ? `Stored: ${r.PartialKey}. Leave empty to keep it; a new value rotates the upstream credential.` : "The upstream credential; stored sealed, shown only masked."}
          error={show(errors.secret) ?? (secret ? errors.secret : undefined) ?? serverFieldError(action.error, "SecretKey")}
        />
      )}
      {type === "azure" && <AzureFields value={azure} onChange={setAzure} />}
      {type === "vertex" && <VertexFields value={vertex} onChange={setVertex} secret={secret} onSecret={setSecret} editing={!!r} />}
      <FormatsField value={formats} onChange={setFormats} />
      <div class="grid">
        <CheckField label="Enabled" checked={enabled} onChange={setEnabled} />
        <CheckField label="Never sleep automatically" checked={noSleep} onChange={setNoSleep} />
      </div>
      {!r && (
        <TextField
          label="Model pattern for this key's Level (optional)"
          value={pattern}
          onInput={setPattern}
          placeholder="e.g. gpt-4o*"
          hint={`Adds the LEVEL_MAPPER entry ${pattern.trim() || "<pattern>"}=${level || "<level>"} so these models go to this Level.`}
          error={errors.pattern}
        />
      )}
      {tried && !valid && (
        <p class="error-text" role="alert">
          Fix the fields marked above.
        </p>
      )}
      <ErrorNote error={action.error} attached={["Provider", "Level", "SecretKey"]} />
      <div class="actions">
        <button type="submit" class="primary" disabled={action.busy || !changed}>
          {r ? "Save key" : "Add key"}
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
