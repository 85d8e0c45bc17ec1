import { useState } from "preact/hooks";
import { api, query } from "../lib/api.ts";
import { ErrorNote, Loading } from "../ui/feedback.tsx";
import { SelectField, TextField } from "../ui/field.tsx";
import { DataTable } from "../ui/table.tsx";
import type { RouteExplanation } from "../../../src/wire/route.ts";

/** `rpm 7 · tpm 1,000`: the members that are set. */
function members(object: Record<string, unknown>, skip: string[] = []): string {
  const parts = Object.entries(object)
    .filter(([name, value]) => !skip.includes(name) && value !== null && value !== undefined)
    .map(([name, value]) => `${name} ${typeof value === "number" ? value.toLocaleString("en-US") : JSON.stringify(value)}`);
  return parts.length ? parts.join(" · ") : "none";
}

function Steps({ route }: { route: RouteExplanation }) {
  return (
    <dl class="info">
      <dt>May call it</dt>
      <dd>
        {route.allowed ? (
          <span class="badge on">Yes</span>
        ) : (
          <>
            <span class="badge fail">No</span> refused by <code>{route.refused_by?.rule}</code>: {route.refused_by?.message}
          </>
        )}
      </dd>
      <dt>MODEL_MAPPER</dt>
      <dd>{route.model_mapper ? <span class="mono">{`${route.model} matches ${route.model_mapper.pattern} → ${route.model_mapper.target}`}</span> : "no entry matches: the model is kept"}</dd>
      <dt>Effective model</dt>
      <dd class="mono">{route.effective_model}</dd>
      <dt>LEVEL_MAPPER</dt>
      <dd>{route.level_mapper ? <span class="mono">{`${route.level_mapper.pattern} → Level ${route.level_mapper.level}`}</span> : "no entry matches: Level 1"}</dd>
      <dt>Served now</dt>
      <dd>{route.served ? "yes, by the key marked below" : <span class="error-text">no key can take the call now (the client would get 502 or 503)</span>}</dd>
      <dt>Price</dt>
      <dd>{route.price ? members(route.price) : "no ChatPricing entry applies"}</dd>
      <dt>Limits</dt>
      <dd>
        {route.limits.length === 0 ? (
          "none apply"
        ) : (
          <ul class="plain">
            {route.limits.map((limit) => (
              <li key={limit.applies_to}>
                {limit.applies_to}: {members(limit, ["applies_to"])}
              </li>
            ))}
          </ul>
        )}
      </dd>
    </dl>
  );
}

/** A Level of the chain: its switch-over state, then its keys in the order they would be tried. */
function LevelKeys({ level, withKeys }: { level: RouteExplanation["levels"][number]; withKeys: boolean }) {
  const rows = level.keys.map((key, index) => ({ ...key, n: index + 1 }));
  return (
    <section aria-label={`Level ${level.level}`}>
      <h4>
        Level {level.level}
        {level.switched ? <span class="badge sleep"> switched over{level.backup !== null ? ` to Level ${level.backup}` : ""}</span> : null}
        {!level.switched && level.backup !== null ? <span class="hint"> (backup: Level {level.backup})</span> : null}
      </h4>
      <DataTable
        caption={`Candidate keys of Level ${level.level}`}
        rows={rows}
        rowKey={(k) => k.n}
        empty="No key in this Level."
        columns={[
          { label: "Order", numeric: true, render: (k) => k.n },
          ...(withKeys ? [{ label: "Key", render: (k: (typeof rows)[number]) => `${k.Name || "(no name)"} #${k.ID}` }] : []),
          { label: "State", render: (k) => k.state },
          { label: "Why", render: (k) => k.why },
          { label: "Takes the call", render: (k) => (k.would_serve ? <span class="badge on">This one</span> : "—") },
        ]}
      />
    </section>
  );
}

/** How a call for a model (by an account) would be served now: `GET /x-route`, nothing called. */
export function RouteExplain() {
  const [model, setModel] = useState("");
  const [account, setAccount] = useState("");
  const [format, setFormat] = useState("openai");
  const [route, setRoute] = useState<RouteExplanation | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const explain = async (e: Event) => {
    e.preventDefault();
    if (!model.trim()) return;
    setBusy(true);
    setError(null);
    try {
      setRoute((await api.get<RouteExplanation>(`/x-route${query({ model: model.trim(), account: account.trim(), format })}`)).data);
    } catch (failure) {
      setRoute(null);
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card" aria-labelledby="route-explain-h" data-testid="route-explain">
      <h3 id="route-explain-h">Route explain</h3>
      <p class="hint">How a call would be served now, step by step, without making it.</p>
      <form class="toolbar" onSubmit={explain}>
        <TextField label="Model" value={model} onInput={setModel} placeholder="gpt-4o" required />
        <TextField label="Account (optional)" value={account} onInput={setAccount} placeholder="ID, name or email; default you" />
        <SelectField label="Client API" value={format} onChange={setFormat} options={[["openai", "OpenAI Chat"], ["responses", "OpenAI Responses"], ["anthropic", "Anthropic"], ["gemini", "Gemini"]]} />
        <button type="submit" class="primary" disabled={busy || !model.trim()}>
          Explain
        </button>
      </form>
      <ErrorNote error={error} />
      {busy && <Loading what="Explaining" />}
      {route && (
        <div aria-live="polite">
          <p>
            A call for <code>{route.model}</code> by {route.account.Name} #{route.account.ID}:
          </p>
          <Steps route={route} />
          {route.levels.map((level) => (
            <LevelKeys key={level.level} level={level} withKeys={level.keys.some((k) => k.ID !== undefined)} />
          ))}
        </div>
      )}
    </section>
  );
}
