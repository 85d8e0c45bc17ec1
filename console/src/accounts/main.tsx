import { api } from "../lib/api.ts";
import type { AccountRecord } from "../lib/types.ts";
import { NoticesAdmin } from "../shared/notices-admin.tsx";
import { mountConsole } from "../shell/app.tsx";
import { useConsole } from "../shell/context.ts";
import { ErrorNote, Loading } from "../ui/feedback.tsx";
import { useLoad } from "../ui/use-load.ts";
import { BatchCreditPanel } from "./batch-credit.tsx";
import { AccountsPanel } from "./list.tsx";
import { UsagePanel } from "./usage.tsx";

/** The accounts list needs the caller's own configuration: its limits bound every child's. */
function Accounts() {
  const info = useLoad(async () => (await api.get<AccountRecord>("/dashboard/info")).data, []);
  if (!info.data) return info.error ? <ErrorNote error={info.error} /> : <Loading />;
  return <AccountsPanel bounds={info.data} />;
}

function Notices() {
  const { status } = useConsole();
  return <NoticesAdmin systemWide={status.isOwner} />;
}

mountConsole("accounts", "Sub-accounts", [
  { id: "list", label: "Accounts", render: () => <Accounts /> },
  { id: "credit", label: "Batch credit", render: () => <BatchCreditPanel /> },
  { id: "notices", label: "Notices", render: () => <Notices /> },
  { id: "usage", label: "Usage", render: () => <UsagePanel /> },
]);
