import { mountConsole } from "../shell/app.tsx";
import { PlaygroundPanel } from "./playground.tsx";

mountConsole("playground", "Playground", [{ id: "chat", label: "Chat", render: () => <PlaygroundPanel /> }]);
