import { describe, expect, test } from "bun:test";
import { formatMs } from "../../console/src/lib/format.ts";
import { requestsLink } from "../../console/src/lib/pages.ts";
import { filterErrors, filterParams, filtersFromSearch, NO_FILTERS } from "../../console/src/requests/filters.ts";

describe("the Requests page's filters", () => {
  test("read from the address under the API's names, and written back the same", () => {
    const filters = filtersFromSearch("?since=2026-03-01&until=2026-03-02&model=gpt-x&key_id=3&status=5xx&junk=1");
    expect(filters).toEqual({ ...NO_FILTERS, since: "2026-03-01", until: "2026-03-02", model: "gpt-x", keyId: "3", status: "5xx" });
    expect(filterParams(filters, true)).toEqual({ model: "gpt-x", status: "5xx", key_id: "3", since: "2026-03-01", until: "2026-03-02" });
    // The key and Level filters are the owner's: not sent for others (the server would answer 403).
    expect(filterParams(filters, false)).toEqual({ model: "gpt-x", status: "5xx", since: "2026-03-01", until: "2026-03-02" });
  });

  test("a bill's day links to the page filtered by the API's names", () => {
    expect(requestsLink({ since: "2026-03-01", until: "2026-03-01", model: "m" })).toBe("/console/requests?model=m&since=2026-03-01&until=2026-03-01");
    expect(filtersFromSearch(requestsLink({ account: "alice", since: "2026-03-01" }).split("?")[1]!)).toEqual({ ...NO_FILTERS, account: "alice", since: "2026-03-01" });
    expect(requestsLink({})).toBe("/console/requests");
  });

  test("what is wrong with a filter is said before anything is sent", () => {
    expect(filterErrors({ ...NO_FILTERS, status: "5xx" })).toEqual({});
    expect(filterErrors({ ...NO_FILTERS, status: "42" }).status).toBeDefined();
    expect(filterErrors({ ...NO_FILTERS, keyId: "0" }).keyId).toBeDefined();
    expect(filterErrors({ ...NO_FILTERS, level: "1.5" }).level).toBeDefined();
    expect(filterErrors({ ...NO_FILTERS, requestId: "req/../x" }).requestId).toBeDefined();
    expect(filterErrors({ ...NO_FILTERS, since: "2026-03-02", until: "2026-03-01" }).until).toBeDefined();
  });
});

describe("durations", () => {
  test("read at a glance", () => {
    expect(formatMs(840)).toBe("840 ms");
    expect(formatMs(1204)).toBe("1.20 s");
    expect(formatMs(125_000)).toBe("2 min 5 s");
    expect(formatMs(null)).toBe("—");
  });
});
