/**
 * A small Prometheus registry: counters and histograms keyed by label values, and
 * gauges computed at scrape time. Updating a metric is a map lookup and an add, so
 * the request path pays almost nothing.
 */
import { SeriesTable } from "./series-table.ts";

export type Labels = Record<string, string>;

interface Family {
  name: string;
  help: string;
  type: "counter" | "histogram" | "gauge";
  labelNames: readonly string[];
}

/** Label values are capped per metric so a flood of made-up model names cannot grow memory without bound. */
const MAX_SERIES = 1000;

/**
 * A label value in the exposition format: backslash, newline and quote escaped; other
 * control characters and lone surrogates (a client's model name may hold them) become
 * U+FFFD, so one call cannot make the whole page unreadable to a scraper.
 */
function escapeValue(value: string): string {
  return value
    .toWellFormed()
    .replace(/[\u0000-\u0009\u000b-\u001f\u007f]/g, "\ufffd")
    .replace(/\\/g, "\\\\")
    .replace(/\n/g, "\\n")
    .replace(/"/g, '\\"');
}

function labelText(names: readonly string[], values: readonly string[], extra = ""): string {
  const parts = names.map((name, i) => `${name}="${escapeValue(values[i] ?? "")}"`);
  if (extra) parts.push(extra);
  return parts.length ? `{${parts.join(",")}}` : "";
}

/** A series' label values in the family's order (a missing label counts as ""). */
const valuesOf = (names: readonly string[], labels: Labels): string[] => names.map((name) => labels[name] ?? "");

export class Counter {
  private readonly series: SeriesTable<{ values: string[]; value: number }>;
  constructor(readonly family: Family) {
    this.series = new SeriesTable(family.labelNames);
  }
  inc(labels: Labels = {}, amount = 1): void {
    const found = this.series.find(labels);
    if (found) {
      found.value += amount;
      return;
    }
    const values = valuesOf(this.family.labelNames, labels);
    if (this.series.size >= MAX_SERIES) values.fill("other");
    const entry = this.series.findValues(values);
    if (entry) entry.value += amount;
    else this.series.add(values, { values, value: amount });
  }
  render(): string[] {
    return this.series.entries.map((s) => `${this.family.name}${labelText(this.family.labelNames, s.values)} ${s.value}`);
  }
}

export class Histogram {
  private readonly series: SeriesTable<{ values: string[]; buckets: number[]; sum: number; count: number }>;
  constructor(
    readonly family: Family,
    private readonly bounds: readonly number[],
  ) {
    this.series = new SeriesTable(family.labelNames);
  }
  observe(value: number, labels: Labels = {}): void {
    let entry = this.series.find(labels);
    if (!entry) {
      // Past the cap, under "other", as counters do: a histogram's count stays the counter's.
      const values = valuesOf(this.family.labelNames, labels);
      if (this.series.size >= MAX_SERIES) values.fill("other");
      entry = this.series.findValues(values);
      if (!entry) {
        entry = { values, buckets: new Array<number>(this.bounds.length).fill(0), sum: 0, count: 0 };
        this.series.add(values, entry);
      }
    }
    for (let i = 0; i < this.bounds.length; i++) if (value <= this.bounds[i]!) entry.buckets[i]!++;
    entry.sum += value;
    entry.count++;
  }
  render(): string[] {
    const lines: string[] = [];
    const { name, labelNames } = this.family;
    for (const s of this.series.entries) {
      this.bounds.forEach((bound, i) => lines.push(`${name}_bucket${labelText(labelNames, s.values, `le="${bound}"`)} ${s.buckets[i]}`));
      lines.push(`${name}_bucket${labelText(labelNames, s.values, 'le="+Inf"')} ${s.count}`);
      lines.push(`${name}_sum${labelText(labelNames, s.values)} ${s.sum}`);
      lines.push(`${name}_count${labelText(labelNames, s.values)} ${s.count}`);
    }
    return lines;
  }
}

export interface GaugeSample {
  labels: Labels;
  value: number;
}

export class Registry {
  private readonly metrics: Array<Counter | Histogram> = [];
  /** Families whose samples are computed when scraped (gauges, and counters kept elsewhere). */
  private readonly gauges: Array<{ family: Family; collect: () => GaugeSample[] }> = [];

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    const metric = new Counter({ name, help, type: "counter", labelNames });
    this.metrics.push(metric);
    return metric;
  }

  histogram(name: string, help: string, bounds: readonly number[], labelNames: readonly string[] = []): Histogram {
    const metric = new Histogram({ name, help, type: "histogram", labelNames }, bounds);
    this.metrics.push(metric);
    return metric;
  }

  /** A gauge whose samples are computed when scraped. */
  gauge(name: string, help: string, labelNames: readonly string[], collect: () => GaugeSample[]): void {
    this.gauges.push({ family: { name, help, type: "gauge", labelNames }, collect });
  }

  /** A counter another module keeps (totals since the start), read when scraped. */
  collectedCounter(name: string, help: string, labelNames: readonly string[], collect: () => GaugeSample[]): void {
    this.gauges.push({ family: { name, help, type: "counter", labelNames }, collect });
  }

  /** The Prometheus text exposition format (version 0.0.4). */
  render(): string {
    const lines: string[] = [];
    for (const metric of this.metrics) {
      const { name, help, type } = metric.family;
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...metric.render());
    }
    for (const { family, collect } of this.gauges) {
      lines.push(`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} ${family.type}`);
      for (const sample of collect()) {
        const values = family.labelNames.map((n) => sample.labels[n] ?? "");
        lines.push(`${family.name}${labelText(family.labelNames, values)} ${sample.value}`);
      }
    }
    return lines.join("\n") + "\n";
  }
}
