import { useState } from "preact/hooks";
import { PRICING_SECTIONS, type PricingSection, type PricingTable } from "../lib/types.ts";
import { patternError } from "../lib/validate.ts";
import { ConfirmDialog } from "../ui/confirm.tsx";
import { ErrorNote, Loading, Success } from "../ui/feedback.tsx";
import { useAction, useLoad } from "../ui/use-load.ts";
import { PriceTable } from "../user/prices.tsx";
import { loadConfig, putConfig, resetConfig } from "./config-api.ts";

const MEMBERS: Record<PricingSection, string[]> = {
  ChatPricing: ["InputText", "OutputText", "CachedText", "CacheWrite", "CacheWrite1h", "ReasonText", "InputAudio", "OutputAudio", "InputImage", "OutputImage", "WebSearch", "FileSearch", "GroundedPrompt", "FastMultiplier", "PriorityMultiplier", "FlexMultiplier", "RegionalMultiplier", "LongInputFactor", "LongOutputFactor", "LongContextAbove", "ContextWindow", "MaxOutput"],
  ImgPricing: ["Call", "Sizes.1024x1024", "Sizes.1024x1536", "Sizes.1536x1024", "Sizes.1792x1024"],
  AudioPricing: ["PerMinute"],
  VideoPricing: ["PerSecond"],
  CallPricing: ["Call"],
};

/** ChatPricing members that are token counts (the model's limits), not prices. */
const TOKEN_LIMITS = ["ContextWindow", "MaxOutput", "LongContextAbove"];

/** ChatPricing members that are factors of the prices, not prices. */
const FACTORS = ["FastMultiplier", "PriorityMultiplier", "FlexMultiplier", "RegionalMultiplier", "LongInputFactor", "LongOutputFactor"];

interface PriceRow {
  section: PricingSection;
  model: string;
  member: string;
  value: string;
}

export function toPriceRows(table: PricingTable | undefined): PriceRow[] {
  const rows: PriceRow[] = [];
  for (const section of PRICING_SECTIONS) {
    for (const [model, entry] of Object.entries(table?.[section] ?? {})) {
      for (const [member, value] of Object.entries(entry)) {
        if (value && typeof value === "object") for (const [size, v] of Object.entries(value)) rows.push({ section, model, member: `${member}.${size}`, value: String(v) });
        else rows.push({ section, model, member, value: String(value) });
      }
    }
  }
  return rows;
}

export function fromPriceRows(rows: PriceRow[]): PricingTable {
  const table: Record<string, Record<string, Record<string, unknown>>> = {};
  for (const r of rows) {
    const entry = ((table[r.section] ??= {})[r.model.trim()] ??= {});
    const [member, size] = r.member.split(".");
    if (size) ((entry[member!] ??= {}) as Record<string, number>)[size] = Number(r.value);
    else entry[member!] = Number(r.value);
  }
  return table as PricingTable;
}

function rowError(r: PriceRow): string | undefined {
  const p = patternError(r.model);
  if (p) return p;
  if (!MEMBERS[r.section].includes(r.member) && !(r.section === "ImgPricing" && /^Sizes\.\d+x\d+$/.test(r.member))) return `Choose a ${r.section} member`;
  if (TOKEN_LIMITS.includes(r.member)) {
    const n = Number(r.value);
    return Number.isInteger(n) && n >= 1 && n <= 100_000_000 ? undefined : "A token count is a whole number from 1 to 100,000,000";
  }
  if (FACTORS.includes(r.member)) {
    const n = Number(r.value);
    return r.value.trim() !== "" && Number.isFinite(n) && n >= 0.01 && n <= 100 ? undefined : "A factor is a number from 0.01 to 100";
  }
  if (r.value.trim() === "" || !Number.isFinite(Number(r.value)) || Number(r.value) < 0) return "A price is a number ≥ 0";
  return undefined;
}

/** Owner price overrides (PRICING, deltas over the built-in catalog) edited as rows. */
function OverridesEditor({ initial, onSaved }: { initial: PriceRow[]; onSaved: () => void }) {
  const [rows, setRows] = useState(initial);
  const [saved, setSaved] = useState(initial);
  const dirty = JSON.stringify(rows) !== JSON.stringify(saved);
  const [confirm, setConfirm] = useState(false);
  const action = useAction();
  const errors = rows.map(rowError);
  const set = (i: number, patch: Partial<PriceRow>) => setRows(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  const save = () =>
    action.run(async () => {
      if (rows.length === 0) await resetConfig();
      else await putConfig({ PRICING: fromPriceRows(rows) });
      setSaved(rows);
      onSaved();
      return "Prices saved; they apply from the next request.";
    });
  const restore = () =>
    action.run(async () => {
      setConfirm(false);
      await resetConfig();
      setRows([]);
      setSaved([]);
      onSaved();
      return "Overrides removed: the built-in catalog applies again.";
    });
  return (
    <section class="card" aria-labelledby="ovr-h">
      <h3 id="ovr-h">
        Price overrides <code class="mono">PRICING</code>
      </h3>
      <p class="hint">
        USD per 1M tokens (chat), per image, per minute (audio), per second (video) or per call. A row for a model the catalog lacks adds it. <code>ContextWindow</code> and{" "}
        <code>MaxOutput</code> are the model's limits in tokens: they bound what a call reserves.
      </p>
      <datalist id="price-members">{[...new Set(Object.values(MEMBERS).flat())].map((m) => <option key={m} value={m} />)}</datalist>
      {rows.map((r, i) => (
        <div class="price-row grid" key={i}>
          <div class="field">
            <label for={`pr-s-${i}`}>Kind, row {i + 1}</label>
            <select id={`pr-s-${i}`} value={r.section} onChange={(e) => set(i, { section: (e.currentTarget as HTMLSelectElement).value as PricingSection, member: "" })}>
              {PRICING_SECTIONS.map((s) => <option key={s} value={s}>{s}</option>)}
            </select>
          </div>
          <div class="field">
            <label for={`pr-m-${i}`}>Model pattern, row {i + 1}</label>
            <input id={`pr-m-${i}`} value={r.model} spellcheck={false} onInput={(e) => set(i, { model: (e.currentTarget as HTMLInputElement).value })} />
          </div>
          <div class="field">
            <label for={`pr-p-${i}`}>Price member, row {i + 1}</label>
            <input id={`pr-p-${i}`} list="price-members" value={r.member} placeholder={MEMBERS[r.section][0]} onInput={(e) => set(i, { member: (e.currentTarget as HTMLInputElement).value })} />
          </div>
          <div class="field">
            <label for={`pr-v-${i}`}>{TOKEN_LIMITS.includes(r.member) ? "Tokens" : FACTORS.includes(r.member) ? "Factor" : "Price (USD)"}, row {i + 1}</label>
            <input id={`pr-v-${i}`} inputMode="decimal" value={r.value} onInput={(e) => set(i, { value: (e.currentTarget as HTMLInputElement).value })} />
          </div>
          <div class="actions">
            <button type="button" aria-label={`Remove price row ${i + 1}`} onClick={() => setRows(rows.filter((_, j) => j !== i))}>
              Remove
            </button>
          </div>
          {errors[i] && <p class="error-text wide">{errors[i]}</p>}
        </div>
      ))}
      <ErrorNote error={action.error} />
      {action.done && <Success>{action.done}</Success>}
      <div class="actions">
        <button type="button" onClick={() => setRows([...rows, { section: "ChatPricing", model: "", member: "InputText", value: "" }])}>
          + Add price
        </button>
        <button type="button" class="primary" disabled={errors.some(Boolean) || !dirty || action.busy} onClick={() => void save()}>
          Save prices
        </button>
        <button type="button" class="danger" onClick={() => setConfirm(true)}>
          Restore defaults
        </button>
      </div>
      <ConfirmDialog open={confirm} title="Restore the default prices?" confirmLabel="Remove all overrides" danger onConfirm={() => void restore()} onCancel={() => setConfirm(false)}>
        <p>Every override is removed and the built-in catalog applies from the next request.</p>
      </ConfirmDialog>
    </section>
  );
}

export function PricingPanel() {
  const config = useLoad(loadConfig, []);
  const [version, setVersion] = useState(0);
  if (!config.data) return config.error ? <ErrorNote error={config.error} /> : <Loading />;
  return (
    <div>
      <OverridesEditor initial={toPriceRows(config.data.PRICING as PricingTable)} onSaved={() => setVersion(version + 1)} />
      <section class="card" aria-labelledby="cat-h">
        <h3 id="cat-h">Current public prices (catalog with overrides)</h3>
        <PriceTable key={version} withKey={false} />
      </section>
    </div>
  );
}
