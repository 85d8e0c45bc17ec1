import { useState } from "preact/hooks";
import { api } from "../lib/api.ts";
import { PRICING_SECTIONS, type PricingAnswer } from "../lib/types.ts";
import { ErrorNote, Loading } from "../ui/feedback.tsx";
import { TextField } from "../ui/field.tsx";
import { ResultStatus } from "../ui/result-status.tsx";
import { DataTable, Pager } from "../ui/table.tsx";
import { useLoad } from "../ui/use-load.ts";

const PAGE = 25;

/** Flattens a price entry: `Sizes` members become `Sizes.1024x1024`. */
export function priceText(entry: Record<string, unknown>): string {
  return Object.entries(entry)
    .flatMap(([member, value]) =>
      value && typeof value === "object" ? Object.entries(value).map(([k, v]) => `${member}.${k} ${v}`) : [`${member} ${value}`],
    )
    .join(" · ");
}

/** A searchable price table; `withKey` shows this account's effective prices (× Rates). */
export function PriceTable({ withKey }: { withKey: boolean }) {
  const pricing = useLoad(async () => (await api.get<PricingAnswer>("/x-pricing", { auth: withKey })).data, [withKey]);
  const [search, setSearch] = useState("");
  const [page, setPage] = useState(1);
  if (!pricing.data) return pricing.error ? <ErrorNote error={pricing.error} /> : <Loading />;
  const p = pricing.data;
  const rows = PRICING_SECTIONS.flatMap((section) =>
    Object.entries(p[section] ?? {}).map(([model, entry]) => ({ section, model, entry })),
  ).filter((r) => !search || r.model.toLowerCase().includes(search.toLowerCase()));
  const pages = Math.max(1, Math.ceil(rows.length / PAGE));
  const shown = rows.slice((page - 1) * PAGE, page * PAGE);
  return (
    <div>
      <p class="hint">
        USD; {Object.entries(p.Units).map(([s, u]) => `${s} ${u}`).join(", ")}.{withKey && ` Prices include your multiplier (Rates ${p.Rates}).`}
      </p>
      <TextField label="Search models" value={search} onInput={(v) => (setSearch(v), setPage(1))} placeholder="e.g. gpt-4o" />
      <ResultStatus query={search} text={`${rows.length} ${rows.length === 1 ? "price matches" : "prices match"}.`} />
      <DataTable
        caption="Prices"
        rows={shown}
        rowKey={(r) => `${r.section}/${r.model}`}
        empty="No model matches."
        columns={[
          { label: "Model pattern", render: (r) => <span class="mono">{r.model}</span> },
          { label: "Kind", render: (r) => r.section.replace("Pricing", "") },
          { label: "Prices", render: (r) => <span class="mono">{priceText(r.entry)}</span> },
        ]}
      />
      <Pager label="Prices" page={page} pages={pages} total={rows.length} onPage={setPage} />
    </div>
  );
}

export const PricesPanel = () => <PriceTable withKey />;
