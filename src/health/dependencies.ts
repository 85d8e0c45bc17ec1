/**
 * Whether the services an instance depends on answer (issue 15, "Faults"): PostgreSQL
 * and Redis, probed on a timer so /healthz, /readyz and /metrics answer at once from
 * the last probe instead of waiting on a service that may hang. An embedded dependency
 * (the SQLite file, the in-memory State) lives in the process and is never down.
 */
export type DependencyName = "database" | "redis";
export type DependencyStatus = "up" | "down" | "embedded";

/** Succeeds when the service answered; rejects (or outlives the timeout) when it did not. */
export type Probe = () => Promise<unknown>;

export interface DependencyMonitor {
  /** Each dependency's status from its last probe. */
  status(): Record<DependencyName, DependencyStatus>;
  /** The dependencies probed (embedded ones are not), with 1 when up. */
  gauges(): Array<{ dependency: DependencyName; up: 0 | 1 }>;
  /** Every probed dependency answered its last probe. */
  allUp(): boolean;
  /** Whether the dependency answered its last probe (true when embedded); allocates nothing, for the request path. */
  up(name: DependencyName): boolean;
  /** When the dependency last answered a probe (ms; its first probe counts from start-up); undefined when not probed. */
  answeredAt(name: DependencyName): number | undefined;
  /** Probes every dependency now (start-up, tests); resolves when all answered or timed out. */
  probe(): Promise<void>;
  stop(): void;
}

export interface MonitorOptions {
  /** Between two rounds of probes (default 1 s). */
  intervalMs?: number;
  /** A probe not answered within this counts as down (default 2 s). */
  timeoutMs?: number;
}

export function createDependencyMonitor(probes: Partial<Record<DependencyName, Probe>>, options: MonitorOptions = {}): DependencyMonitor {
  const timeoutMs = options.timeoutMs ?? 2000;
  const up = new Map<DependencyName, boolean>();
  const answeredAt = new Map<DependencyName, number>();
  const names = Object.keys(probes) as DependencyName[];
  for (const name of names) up.set(name, true);
  // Up at start: the store and Redis were opened just before.
  for (const name of names) answeredAt.set(name, Date.now());

  const answered = async (probe: Probe): Promise<boolean> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      return await Promise.race([probe().then(() => true), late]);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  };
  let round: Promise<void> | undefined;
  const probe = () =>
    (round ??= Promise.all(
      names.map(async (name) => {
        const ok = await answered(probes[name]!);
        up.set(name, ok);
        if (ok) answeredAt.set(name, Date.now());
      }),
    ).then(() => {
      round = undefined;
    }));
  const timer = names.length > 0 ? setInterval(() => void probe(), options.intervalMs ?? 1000) : undefined;
  timer?.unref?.();

  const statusOf = (name: DependencyName): DependencyStatus => (!up.has(name) ? "embedded" : up.get(name) ? "up" : "down");
  return {
    status: () => ({ database: statusOf("database"), redis: statusOf("redis") }),
    gauges: () => names.map((dependency) => ({ dependency, up: up.get(dependency) ? 1 : 0 })),
    allUp: () => names.every((name) => up.get(name)),
    up: (name) => up.get(name) !== false,
    answeredAt: (name) => answeredAt.get(name),
    probe,
    stop: () => clearInterval(timer),
  };
}
