import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import { Empty } from "./feedback.tsx";

import { PALETTE } from "./palette.ts";

export interface Series {
  label: string;
  values: number[];
}

type Format = (value: number) => string;

/** The page's theme (`data-theme`, set by lib/theme.ts), followed as it changes. */
function useTheme(): string | undefined {
  const [theme, setTheme] = useState(document.documentElement.dataset.theme);
  useEffect(() => {
    const observer = new MutationObserver(() => setTheme(document.documentElement.dataset.theme));
    observer.observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
    return () => observer.disconnect();
  }, []);
  return theme;
}

/**
 * Mounts a uPlot chart sized to its container and follows the container's width; it is
 * drawn again when the theme changes, since canvas colours do not follow the stylesheet.
 */
function usePlot(build: (width: number) => uPlot.Options, data: uPlot.AlignedData, deps: unknown[]) {
  const ref = useRef<HTMLDivElement>(null);
  const theme = useTheme();
  useEffect(() => {
    const host = ref.current;
    if (!host) return;
    const width = () => Math.max(240, host.clientWidth);
    const plot = new uPlot(build(width()), data, host);
    const observer = new ResizeObserver(() => plot.setSize({ width: width(), height: plot.height }));
    observer.observe(host);
    return () => {
      observer.disconnect();
      plot.destroy();
    };
  }, [...deps, theme]);
  return ref;
}

/**
 * Axis colours from the theme's variables: fixed ones (dark grey labels) were 1.7:1 on the
 * dark theme's cards. Read when a chart is built, so after the theme is applied.
 */
function axisColours() {
  const css = getComputedStyle(document.documentElement);
  const colour = (name: string) => css.getPropertyValue(name).trim();
  return { stroke: colour("--muted"), grid: { stroke: colour("--row-line") }, ticks: { stroke: colour("--line") } };
}

/** One line per series over days (`YYYY-MM-DD`, read as UTC dates like the router's business dates). */
export function TimeChart(props: { title: string; days: string[]; series: Series[]; format: Format; testId?: string }) {
  const xs = props.days.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000);
  const data = [xs, ...props.series.map((s) => s.values)] as uPlot.AlignedData;
  const ref = usePlot(
    (width) => ({
      width,
      height: 240,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
      scales: { x: { time: true } },
      axes: [
        { ...axisColours(), values: "{MMM} {D}" },
        { ...axisColours(), size: 70, values: (_u, splits) => splits.map((v) => props.format(v)) },
      ],
      series: [
        { label: "Day", value: "{YYYY}-{MM}-{DD}" },
        ...props.series.map((s, i) => ({
          label: s.label,
          stroke: PALETTE[i % PALETTE.length],
          width: 2,
          points: { show: true, size: 6 },
          value: (_u: uPlot, v: number | null) => (v === null ? "—" : props.format(v)),
        })),
      ],
    }),
    data,
    [JSON.stringify(data), props.title],
  );
  if (props.series.length === 0 || xs.length === 0) return <Empty>No usage to chart in this range.</Empty>;
  return (
    <figure class="chart" data-testid={props.testId}>
      <figcaption>{props.title}</figcaption>
      <div ref={ref} role="img" aria-label={`${props.title}: chart of ${props.series.map((s) => s.label).join(", ")} per day`} />
    </figure>
  );
}

/** Bars for named categories (accounts, models). */
export function BarChart(props: { title: string; labels: string[]; values: number[]; format: Format; testId?: string }) {
  const xs = props.labels.map((_, i) => i);
  const data = [xs, props.values] as uPlot.AlignedData;
  const ref = usePlot(
    (width) => ({
      width,
      height: 240,
      scales: { x: { time: false, range: [-0.5, Math.max(0.5, props.labels.length - 0.5)] } },
      axes: [
        { ...axisColours(), splits: () => xs, values: (_u, splits) => splits.map((i) => shorten(props.labels[i] ?? "")) },
        { ...axisColours(), size: 70, values: (_u, splits) => splits.map((v) => props.format(v)) },
      ],
      series: [
        { label: "Name", value: (_u: uPlot, i: number | null) => (i === null ? "—" : (props.labels[i] ?? "")) },
        {
          label: props.title,
          stroke: PALETTE[0],
          fill: "rgba(37, 99, 235, 0.55)",
          paths: uPlot.paths.bars!({ size: [0.6, 80] }),
          points: { show: false },
          value: (_u: uPlot, v: number | null) => (v === null ? "—" : props.format(v)),
        },
      ],
    }),
    data,
    [JSON.stringify(data), props.title],
  );
  if (props.labels.length === 0) return <Empty>Nothing to chart in this range.</Empty>;
  return (
    <figure class="chart" data-testid={props.testId}>
      <figcaption>{props.title}</figcaption>
      <div ref={ref} role="img" aria-label={`${props.title}: ${props.labels.map((l, i) => `${l} ${props.format(props.values[i] ?? 0)}`).join(", ")}`} />
    </figure>
  );
}

const shorten = (text: string) => (text.length > 14 ? `${text.slice(0, 13)}…` : text);
