/**
 * Time in one place, so that business dates (RPD/TPD quotas, the rotation confirm
 * string, daily bills) follow the configured time zone and tests can move time.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** The IANA zone business dates are computed in. */
  readonly timeZone: string;
  /** `YYYY-MM-DD` of the given instant (default now) in the business time zone. */
  businessDate(at?: number): string;
  /** `YYYY-MM` of the given instant (default now) in the business time zone. */
  businessMonth(at?: number): string;
}

/** Throws a RangeError for a zone name the runtime does not know. */
export function assertTimeZone(timeZone: string): void {
  new Intl.DateTimeFormat("en-CA", { timeZone });
}

export function systemTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

export function createClock(timeZone: string = systemTimeZone(), now: () => number = Date.now): Clock {
  // en-CA formats dates as YYYY-MM-DD, which is exactly the wire format we need.
  const format = new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit", day: "2-digit" });
  let cachedAt = -1;
  let cachedDate = "";
  const businessDate = (at = now()) => {
    // Dates change once a day; formatting is the expensive part, so reuse it within a second.
    const second = Math.floor(at / 1000);
    if (second !== cachedAt) {
      cachedAt = second;
      cachedDate = format.format(at);
    }
    return cachedDate;
  };
  return {
    now,
    timeZone,
    businessDate,
    businessMonth: (at) => businessDate(at).slice(0, 7),
  };
}

/** A clock whose time only moves when a test says so. */
export function createManualClock(start: number, timeZone = "UTC"): Clock & { advance(ms: number): void; set(ms: number): void } {
  let current = start;
  const clock = createClock(timeZone, () => current);
  return Object.assign(clock, {
    advance(ms: number) {
      current += ms;
    },
    set(ms: number) {
      current = ms;
    },
  });
}

/**
 * Each clock's current business day and the moment it ends: the rate-limit headers ask
 * for it on every call whose tightest limit is a day quota, and the search below costs
 * 11-19 µs (dozens of formatted dates), so it runs once per day instead.
 */
const dayEnds = new WeakMap<Clock, { date: string; endsAt: number }>();

/** Milliseconds from `now` until the business date changes (the next midnight in the clock's zone). */
export function msUntilNextBusinessDay(clock: Clock, now = clock.now()): number {
  const today = clock.businessDate(now);
  const known = dayEnds.get(clock);
  // The same date before its known end: the same end (dates never repeat within a zone's day).
  if (known && known.date === today && now < known.endsAt) return known.endsAt - now;
  const endsAt = searchDayEnd(clock, today, now);
  dayEnds.set(clock, { date: today, endsAt });
  return endsAt - now;
}

/** The first millisecond after `now` whose business date is not `today`. */
function searchDayEnd(clock: Clock, today: string, now: number): number {
  let low = now;
  let high = now + 3_600_000;
  while (clock.businessDate(high) === today) high += 3_600_000;
  // Binary search to the millisecond, so Retry-After is not a second too long.
  while (high - low > 1) {
    const mid = low + Math.floor((high - low) / 2);
    if (clock.businessDate(mid) === today) low = mid;
    else high = mid;
  }
  return high;
}

/** Milliseconds from `now` until the business month changes. */
export function msUntilNextBusinessMonth(clock: Clock, now = clock.now()): number {
  const month = clock.businessMonth(now);
  let at = now;
  while (clock.businessMonth(at + msUntilNextBusinessDay(clock, at)) === month) at += msUntilNextBusinessDay(clock, at);
  return at - now + msUntilNextBusinessDay(clock, at);
}
