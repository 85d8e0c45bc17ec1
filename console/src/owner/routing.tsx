import { useState } from "preact/hooks";
import { checkLevelMapper, checkModelMapper, checkSwitchOver, mapperToRows, rowsToMapper, type Checked, type Row } from "../lib/validate.ts";
import { ErrorNote, Loading, Success } from "../ui/feedback.tsx";
import { RowsEditor } from "../ui/rows-editor.tsx";
import { useAction, useLoad } from "../ui/use-load.ts";
import { loadConfig, putConfig } from "./config-api.ts";
import { RouteExplain } from "./route-explain.tsx";

interface MapperSpec {
  item: "MODEL_MAPPER" | "LEVEL_MAPPER" | "SWITCH_OVER";
  title: string;
  help: string;
  left: string;
  right: string;
  leftPlaceholder: string;
  rightPlaceholder: string;
  check: (rows: Row[]) => Checked;
}

const MAPPERS: MapperSpec[] = [
  {
    item: "MODEL_MAPPER",
    title: "Model mapper",
    help: "Turns a requested model into another before routing. * matches any run of characters; an exact name beats a pattern, then the pattern with more literal characters, then the earlier row.",
    left: "Requested model pattern",
    right: "Target model",
    leftPlaceholder: "gpt-4*",
    rightPlaceholder: "gpt-4o",
    check: checkModelMapper,
  },
  {
    item: "LEVEL_MAPPER",
    title: "Level mapper",
    help: "Chooses which Level's keys serve a model. Models no row matches go to Level 1.",
    left: "Model pattern",
    right: "Level",
    leftPlaceholder: "claude-*",
    rightPlaceholder: "2",
    check: checkLevelMapper,
  },
  {
    item: "SWITCH_OVER",
    title: "Switch-over",
    help: "When a Level keeps failing (more than 5 upstream errors in a minute), its calls go to the backup Level until it recovers. Chains are followed; cycles are refused.",
    left: "Primary Level",
    right: "Backup Level",
    leftPlaceholder: "1",
    rightPlaceholder: "2",
    check: checkSwitchOver,
  },
];

function MapperEditor(props: { spec: MapperSpec; initial: unknown }) {
  const { spec } = props;
  const [saved, setSaved] = useState<Row[]>(() => mapperToRows(props.initial));
  const [rows, setRows] = useState<Row[]>(saved);
  const action = useAction();
  const checked = spec.check(rows);
  const dirty = JSON.stringify(rows) !== JSON.stringify(saved);
  const save = () =>
    action.run(async () => {
      // The text form keeps the rows' order as typed (an object would put integer-like names first).
      const configs = await putConfig({ [spec.item]: rowsToMapper(rows) });
      const next = mapperToRows(configs[spec.item]);
      setSaved(next);
      setRows(next);
      return `${spec.item} saved: it applies from the next request.`;
    });
  const id = `mapper-${spec.item}`;
  return (
    <section class="card" aria-labelledby={id} data-testid={id}>
      <h3 id={id}>
        {spec.title} <code class="mono">{spec.item}</code>
      </h3>
      <p class="hint">{spec.help}</p>
      <RowsEditor
        name={spec.item}
        rows={rows}
        onChange={(next) => (setRows(next), action.setDone(null))}
        leftLabel={spec.left}
        rightLabel={spec.right}
        leftPlaceholder={spec.leftPlaceholder}
        rightPlaceholder={spec.rightPlaceholder}
        checked={checked}
        rightInputMode={spec.item === "MODEL_MAPPER" ? "text" : "numeric"}
      />
      <ErrorNote error={action.error} />
      {action.done && <Success>{action.done}</Success>}
      <div class="actions">
        <button type="button" class="primary" disabled={!checked.ok || !dirty || action.busy} onClick={() => void save()}>
          Save {spec.item}
        </button>
        <button type="button" disabled={!dirty} onClick={() => setRows(saved)}>
          Undo changes
        </button>
        {!checked.ok && <span class="error-text">Fix the marked rows to save.</span>}
      </div>
    </section>
  );
}

/** MODEL_MAPPER, LEVEL_MAPPER and SWITCH_OVER as row editors, each saved on its own; the Route explain box under them. */
export function RoutingPanel() {
  const config = useLoad(loadConfig, []);
  if (!config.data) return config.error ? <ErrorNote error={config.error} /> : <Loading />;
  return (
    <div>
      {MAPPERS.map((spec) => (
        <MapperEditor key={spec.item} spec={spec} initial={config.data![spec.item]} />
      ))}
      <RouteExplain />
    </div>
  );
}
