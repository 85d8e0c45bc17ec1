import { describe, expect, test } from "bun:test";
import { HttpError } from "../../src/core/errors.ts";
import { dateOf, datesIn, dayNumber, MAX_RANGE_DAYS, parseBillRange } from "../../src/metering/reports/dates.ts";

const TODAY = "2026-03-10";
const parse = (query: string, today = TODAY) => parseBillRange(new URLSearchParams(query), today);

/** The 400's `param`, or a failure when the query parses. */
function refusal(query: string, today = TODAY): string | undefined {
  try {
    parse(query, today);
  } catch (error) {
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).status).toBe(400);
    return (error as HttpError).param;
  }
  throw new Error(`${query} was accepted`);
}

describe("calendar dates", () => {
  test("day numbers round-trip, leap years included", () => {
    for (const date of ["1970-01-01", "2000-02-29", "2024-02-29", "2026-12-31", "0001-01-01", "9999-12-31"]) {
      expect(dayNumber(date)).toBeDefined();
      expect(dateOf(dayNumber(date)!)).toBe(date);
    }
    expect(dayNumber("1970-01-02")).toBe(1);
    expect(dayNumber("2026-03-01")! - dayNumber("2026-02-28")!).toBe(1);
  });

  test("impossible and malformed dates are not dates", () => {
    for (const bad of ["2026-02-29", "1900-02-29", "2026-02-30", "2026-04-31", "2026-13-01", "2026-00-10", "2026-01-00", "0000-01-01", "2026-3-1", "20260301", "2026-03-01T00:00", " 2026-03-01", "abc", ""]) {
      expect(dayNumber(bad)).toBeUndefined();
    }
  });

  test("datesIn lists every day of an inclusive range across a month end", () => {
    expect(datesIn({ start: "2024-02-27", end: "2024-03-02" })).toEqual(["2024-02-27", "2024-02-28", "2024-02-29", "2024-03-01", "2024-03-02"]);
    expect(datesIn({ start: TODAY, end: TODAY })).toEqual([TODAY]);
  });
});

describe("parseBillRange", () => {
  test("no parameter means today; empty values count as absent", () => {
    expect(parse("")).toEqual({ start: TODAY, end: TODAY });
    expect(parse("date=&start=&end=&days=")).toEqual({ start: TODAY, end: TODAY });
  });

  test("date is one day, past or future", () => {
    expect(parse("date=2026-02-28")).toEqual({ start: "2026-02-28", end: "2026-02-28" });
    expect(parse("date=2027-01-01")).toEqual({ start: "2027-01-01", end: "2027-01-01" });
  });

  test("start and end are inclusive; start alone runs through today", () => {
    expect(parse("start=2026-02-01&end=2026-02-28")).toEqual({ start: "2026-02-01", end: "2026-02-28" });
    expect(parse("start=2026-03-10&end=2026-03-10")).toEqual({ start: TODAY, end: TODAY });
    expect(parse("start=2026-03-01")).toEqual({ start: "2026-03-01", end: TODAY });
  });

  test("days counts back from today, today included, across month and leap-day boundaries", () => {
    expect(parse("days=1")).toEqual({ start: TODAY, end: TODAY });
    expect(parse("days=10")).toEqual({ start: "2026-03-01", end: TODAY });
    expect(parse("days=11")).toEqual({ start: "2026-02-28", end: TODAY });
    expect(parse("days=2", "2024-03-01")).toEqual({ start: "2024-02-29", end: "2024-03-01" });
    expect(parse(`days=${MAX_RANGE_DAYS}`)).toEqual({ start: "2025-03-10", end: TODAY });
  });

  test("ranges up to the maximum pass, longer ones are refused naming start", () => {
    expect(parse("start=2024-01-01&end=2024-12-31")).toEqual({ start: "2024-01-01", end: "2024-12-31" });
    expect(refusal("start=2024-01-01&end=2025-01-01")).toBe("start");
    expect(refusal("start=2020-01-01")).toBe("start");
  });

  test("malformed or impossible dates name their parameter", () => {
    expect(refusal("date=2026-02-30")).toBe("date");
    expect(refusal("date=2026-3-1")).toBe("date");
    expect(refusal("date=yesterday")).toBe("date");
    expect(refusal("start=2026-02-29&end=2026-03-01")).toBe("start");
    expect(refusal("start=2026-02-01&end=2026-02-31")).toBe("end");
  });

  test("days must be an integer from 1 to the maximum", () => {
    for (const days of ["0", "-1", "1.5", "1e2", "abc", String(MAX_RANGE_DAYS + 1), "99999999999"]) {
      expect(refusal(`days=${encodeURIComponent(days)}`)).toBe("days");
    }
  });

  test("start after end is refused naming start, a start after today without end too", () => {
    expect(refusal("start=2026-03-05&end=2026-03-04")).toBe("start");
    expect(refusal("start=2026-03-11")).toBe("start");
  });

  test("forms do not mix, and end needs start", () => {
    expect(refusal("date=2026-03-01&start=2026-03-01")).toBe("date");
    expect(refusal("date=2026-03-01&end=2026-03-01")).toBe("date");
    expect(refusal("date=2026-03-01&days=3")).toBe("date");
    expect(refusal("days=3&start=2026-03-01")).toBe("days");
    expect(refusal("days=3&end=2026-03-01")).toBe("days");
    expect(refusal("end=2026-03-01")).toBe("end");
  });
});
