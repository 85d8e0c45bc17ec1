import { mountConsole } from "../shell/app.tsx";
import { RequestsPanel } from "./panel.tsx";

mountConsole("requests", "Requests", [{ id: "calls", label: "Model calls", render: () => <RequestsPanel /> }]);
