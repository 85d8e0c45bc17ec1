import { NoticesAdmin } from "../shared/notices-admin.tsx";
import { mountConsole } from "../shell/app.tsx";
import { KeysPanel } from "./keys.tsx";
import { OplogPanel } from "./oplog.tsx";
import { PricingPanel } from "./pricing.tsx";
import { RoutingPanel } from "./routing.tsx";
import { SystemPanel } from "./system.tsx";

mountConsole("owner", "Owner console", [
  { id: "keys", label: "Provider keys", render: () => <KeysPanel /> },
  { id: "routing", label: "Routing", render: () => <RoutingPanel /> },
  { id: "system", label: "Limits & mail", render: () => <SystemPanel /> },
  { id: "pricing", label: "Pricing", render: () => <PricingPanel /> },
  { id: "notices", label: "Notices", render: () => <NoticesAdmin systemWide /> },
  { id: "log", label: "Operation log", render: () => <OplogPanel /> },
]);
