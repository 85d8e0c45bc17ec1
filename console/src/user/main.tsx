import { mountConsole } from "../shell/app.tsx";
import { AccountPanel } from "./account.tsx";
import { BillPanel } from "./bill.tsx";
import { LivePanel } from "./live.tsx";
import { NewsPanel } from "./news.tsx";
import { PricesPanel } from "./prices.tsx";
import { QuickStart } from "./quickstart.tsx";
import { RotatePanel } from "./rotate.tsx";

mountConsole("user", "My usage", [
  { id: "live", label: "Live usage", render: () => <LivePanel /> },
  { id: "bills", label: "Bill history", render: () => <BillPanel /> },
  { id: "account", label: "Account & limits", render: () => <AccountPanel /> },
  { id: "prices", label: "Prices", render: () => <PricesPanel /> },
  { id: "notices", label: "Notices", render: () => <NewsPanel /> },
  { id: "key", label: "API key", render: () => <RotatePanel /> },
  { id: "start", label: "Quick start", render: () => <QuickStart /> },
]);
