import { KEY_FORMATS, type KeyFormat } from "../../../src/wire/constants.ts";
import { checkLevelMapper, type Checked, type Row } from "../lib/validate.ts";
import { CheckField, TextArea, TextField } from "../ui/field.tsx";
import { RowsEditor } from "../ui/rows-editor.tsx";

/** A model → value mapping (Azure deployments, api versions): both sides required, no repeats. */
export function checkPairs(rows: Row[], what: string): Checked {
  const base = checkLevelMapper(rows.map((r) => ({ left: r.left, right: "1" })));
  const errors = base.rows.map((e, i) => ({ left: e.left, right: rows[i]!.right.trim() ? undefined : `Enter the ${what}` }));
  return { rows: errors, ok: errors.every((e) => !e.left && !e.right) };
}

export interface AzureState {
  deployments: Row[];
  apiVersions: Row[];
}

export function AzureFields(props: { value: AzureState; onChange: (value: AzureState) => void }) {
  const { value } = props;
  return (
    <fieldset>
      <legend>Azure OpenAI</legend>
      <p class="hint">
        Provider is the resource's endpoint, e.g. https://my-resource.openai.azure.com. A model without a deployment row is sent to a deployment of
        the same name.
      </p>
      <h3>Deployments (model → deployment)</h3>
      <RowsEditor
        name="deployments"
        rows={value.deployments}
        onChange={(deployments) => props.onChange({ ...value, deployments })}
        leftLabel="Model"
        rightLabel="Deployment"
        leftPlaceholder="gpt-4o"
        rightPlaceholder="my-gpt4o-deployment"
        checked={checkPairs(value.deployments, "deployment name")}
      />
      <h3>API versions (model → api-version)</h3>
      <p class="hint">Empty: the server's AZURE_OPENAI_API_VERSION, else 2025-04-01-preview.</p>
      <RowsEditor
        name="api-versions"
        rows={value.apiVersions}
        onChange={(apiVersions) => props.onChange({ ...value, apiVersions })}
        leftLabel="Model"
        rightLabel="API version"
        leftPlaceholder="gpt-4o"
        rightPlaceholder="2025-04-01-preview"
        checked={checkPairs(value.apiVersions, "API version")}
      />
    </fieldset>
  );
}

export interface VertexState {
  projectId: string;
  location: string;
}

/** What a pasted service-account key file says, or why it is not one. Nothing is sent anywhere by this. */
export function describeServiceAccount(text: string): { email?: string; project?: string; error?: string } {
  if (!text.trim()) return {};
  try {
    const file = JSON.parse(text) as Record<string, unknown>;
    if (file.type !== "service_account") return { error: 'The key file\'s "type" must be "service_account"' };
    if (typeof file.client_email !== "string" || typeof file.private_key !== "string") {
      return { error: "The key file needs client_email and private_key" };
    }
    return { email: file.client_email, project: typeof file.project_id === "string" ? file.project_id : undefined };
  } catch {
    return { error: "Paste the service-account key file (JSON) as Google issues it" };
  }
}

export function VertexFields(props: { value: VertexState; onChange: (value: VertexState) => void; secret: string; onSecret: (s: string) => void; editing: boolean }) {
  const { value } = props;
  const sa = describeServiceAccount(props.secret);
  const locationError = value.location && !/^[a-z][a-z0-9-]*[a-z0-9]$/.test(value.location) ? "Only a-z, 0-9 and '-' (e.g. us-central1)" : undefined;
  const projectError = value.projectId && !/^[a-z0-9][a-z0-9.:-]*$/.test(value.projectId) ? "Only a-z, 0-9, '-', '.' and ':'" : undefined;
  return (
    <fieldset>
      <legend>Google Vertex AI</legend>
      <div class="grid">
        <TextField label="Project ID" value={value.projectId} onInput={(projectId) => props.onChange({ ...value, projectId })} hint={sa.project ? `Empty: ${sa.project} (from the key file)` : "Empty: the key file's project_id"} error={projectError} />
        <TextField label="Location" value={value.location} onInput={(location) => props.onChange({ ...value, location })} placeholder="global" hint="Empty: global" error={locationError} />
      </div>
      <TextArea
        label="Service-account key (JSON)"
        rows={6}
        masked
        value={props.secret}
        onInput={props.onSecret}
        required={!props.editing}
        placeholder='{"type": "service_account", "client_email": "…", "private_key": "…"}'
        hint={sa.email ? `Client email: ${sa.email}` : props.editing ? "Leave empty to keep the stored key file." : "Holds the client email and private key; stored sealed."}
        error={sa.error}
      />
    </fieldset>
  );
}

const FORMAT_LABELS: Record<KeyFormat, string> = {
  openai: "OpenAI Chat Completions (and the rest of the OpenAI API)",
  responses: "OpenAI Responses",
  anthropic: "Anthropic Messages",
  gemini: "Gemini generateContent",
};

/**
 * `config.formats`: what the key speaks natively. Routing prefers such keys and translates
 * for the others, so the list matters; none checked sends no list (the server's default).
 */
export function FormatsField(props: { value: KeyFormat[]; onChange: (value: KeyFormat[]) => void }) {
  const toggle = (format: KeyFormat, on: boolean) => props.onChange(KEY_FORMATS.filter((f) => (f === format ? on : props.value.includes(f))));
  return (
    <fieldset>
      <legend>Formats the key speaks</legend>
      <p class="hint">None checked: the default for the provider type and host (every format for a host the router does not know).</p>
      <div class="grid">
        {KEY_FORMATS.map((format) => (
          <CheckField key={format} label={FORMAT_LABELS[format]} checked={props.value.includes(format)} onChange={(on) => toggle(format, on)} />
        ))}
      </div>
    </fieldset>
  );
}
