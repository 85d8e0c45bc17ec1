import { api } from "../lib/api.ts";
import { formatCredit, formatCredits, formatLimit, formatTime } from "../lib/format.ts";
import { RATE_FIELDS, SPEND_FIELDS, type AccountRecord, type CreditReport } from "../lib/types.ts";
import { useConsole } from "../shell/context.ts";
import { ErrorNote, Loading } from "../ui/feedback.tsx";
import { DataTable } from "../ui/table.tsx";
import { useLoad } from "../ui/use-load.ts";
import { Stat } from "./live.tsx";

const LIMIT_HELP: Record<string, string> = {
  RPM: "requests per minute",
  RPH: "requests per hour",
  RPD: "requests per day",
  TPM: "tokens per minute",
  TPH: "tokens per hour",
  TPD: "tokens per day",
  DailyLimit: "credits per day (hard)",
  HardLimit: "credits per month (hard)",
  SoftLimit: "credits per month (warning mail)",
};

/** Account configuration and limits (/dashboard/info) and the balance (/dashboard/status). */
export function AccountPanel() {
  const { status } = useConsole();
  const info = useLoad(async () => (await api.get<AccountRecord>("/dashboard/info")).data, []);
  const credit = useLoad(async () => (await api.get<CreditReport>("/dashboard/credit")).data, []);
  if (!info.data) return info.error ? <ErrorNote error={info.error} /> : <Loading />;
  const a = info.data;
  const limits = [...RATE_FIELDS, ...SPEND_FIELDS].map((field) => ({ field, value: a[field] }));
  const modelLimits = Object.entries(a.ModelLimits ?? {}).map(([pattern, l]) => ({ pattern, ...l }));
  return (
    <div>
      <div class="stats">
        <Stat
          label="Balance"
          value={formatCredits(status.balance)}
          hint={
            status.isOwner && status.balance < 0
              ? "Below zero: owners are never refused for balance, so this is what calls cost beyond the credit granted to this owner. 1 credit = 1 USD."
              : "Unexpired credit; 1 credit = 1 USD"
          }
        />
        <Stat label="Price multiplier" value={String(a.Rates)} />
        <Stat label="Account level" value={String(a.Level)} />
      </div>
      <section class="card" aria-labelledby="acct-h">
        <h3 id="acct-h">Account</h3>
        <dl class="info">
          <dt>ID</dt>
          <dd>{a.ID}</dd>
          <dt>Name</dt>
          <dd>{a.Name}</dd>
          <dt>Email</dt>
          <dd>{a.Email}</dd>
          <dt>Alias</dt>
          <dd>{a.Alias ?? "—"}</dd>
          <dt>Billing email</dt>
          <dd>{a.BillingEmail ?? "—"}</dd>
          <dt>Key</dt>
          <dd class="mono">{a.KeyPrefix}…</dd>
          <dt>Allowed IPs</dt>
          <dd>{a.AllowIPs || "any"}</dd>
          <dt>Allowed models</dt>
          <dd>{a.AllowModels || "any"}</dd>
          <dt>Allowed API paths</dt>
          <dd class="mono">{a.Resources}</dd>
          <dt>Created</dt>
          <dd>{formatTime(a.CreatedAt)}</dd>
        </dl>
      </section>
      <section class="card" aria-labelledby="credit-h">
        <h3 id="credit-h">Credit grants</h3>
        <DataTable
          caption="Credit grants, soonest expiry first"
          rows={credit.data?.grants ?? []}
          rowKey={(g) => `${g.created_at}-${g.expires_at}-${g.remaining}`}
          empty="No credit."
          columns={[
            { label: "Granted", render: (g) => formatTime(g.created_at) },
            { label: "Amount", numeric: true, render: (g) => formatCredit(g.amount) },
            { label: "Left", numeric: true, render: (g) => formatCredit(g.remaining) },
            { label: "Expires", render: (g) => (g.expires_at ? formatTime(g.expires_at) : "never") },
          ]}
        />
      </section>
      <section class="card" aria-labelledby="limits-h">
        <h3 id="limits-h">Limits</h3>
        <DataTable
          caption="Account limits"
          rows={limits}
          rowKey={(r) => r.field}
          empty="No limits."
          columns={[
            { label: "Limit", render: (r) => r.field },
            { label: "Meaning", render: (r) => LIMIT_HELP[r.field] },
            { label: "Value", numeric: true, render: (r) => (SPEND_FIELDS.includes(r.field as never) && r.value !== null ? formatCredit(r.value) : formatLimit(r.value)) },
          ]}
        />
        <h3>Per-model limits</h3>
        <DataTable
          caption="Per-model limits"
          rows={modelLimits}
          rowKey={(r) => r.pattern}
          empty="No per-model limits."
          columns={[
            { label: "Model pattern", render: (r) => <span class="mono">{r.pattern}</span> },
            ...(["rpm", "rph", "rpd", "tpm", "tph", "tpd"] as const).map((m) => ({ label: m.toUpperCase(), numeric: true, render: (r: (typeof modelLimits)[number]) => formatLimit(r[m]) })),
          ]}
        />
      </section>
    </div>
  );
}
