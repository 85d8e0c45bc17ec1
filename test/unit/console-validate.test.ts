import { describe, expect, test } from "bun:test";
import { lineRows, lineRowsCsv, perModelSeries } from "../../console/src/lib/bill-data.ts";
import type { BillInfo } from "../../console/src/lib/types.ts";
import {
  checkLevelMapper,
  checkModelMapper,
  checkSwitchOver,
  ipListError,
  limitError,
  mapperToRows,
  modelListError,
  objectToRows,
  resourcesError,
  rowsToMapper,
  rowsToObject,
} from "../../console/src/lib/validate.ts";

// The console's as-you-type checks mirror what PUT /x-config and the account
// endpoints refuse, so a mistake is marked on its row before saving.
const rows = (...pairs: Array<[string, string]>) => pairs.map(([left, right]) => ({ left, right }));

describe("console validation", () => {
  test("MODEL_MAPPER: patterns on the left, a concrete model on the right, no repeats", () => {
    expect(checkModelMapper(rows(["gpt-4*", "gpt-4o"], ["alias", "mock-gpt"])).ok).toBe(true);
    const bad = checkModelMapper(rows(["gpt 4", "x"], ["a", "b*"], ["", ""], ["a", "c"]));
    expect(bad.ok).toBe(false);
    expect(bad.rows[0]!.left).toContain("spaces");
    expect(bad.rows[1]!.right).toContain("not a pattern");
    expect(bad.rows[2]).toEqual({ left: "Enter a model name or pattern", right: "Enter the target model" });
    expect(bad.rows[3]!.left).toContain("already");
    expect(checkModelMapper(rows(["a=b", "c"])).rows[0]!.left).toContain('"="');
  });

  test("LEVEL_MAPPER: Levels are positive integers", () => {
    expect(checkLevelMapper(rows(["claude-*", "2"])).ok).toBe(true);
    for (const level of ["0", "-1", "1.5", "two", ""]) expect(checkLevelMapper(rows(["m", level])).rows[0]!.right).toBeDefined();
  });

  test("SWITCH_OVER: no self-backup, one backup per Level, no cycles; chains are fine", () => {
    expect(checkSwitchOver(rows(["1", "2"], ["2", "3"])).ok).toBe(true);
    expect(checkSwitchOver(rows(["1", "1"])).rows[0]!.right).toContain("itself");
    expect(checkSwitchOver(rows(["1", "2"], ["1", "3"])).rows[1]!.left).toContain("already");
    const cycle = checkSwitchOver(rows(["1", "2"], ["2", "3"], ["3", "1"]));
    expect(cycle.ok).toBe(false);
    expect(cycle.list).toContain("1 → 2 → 3 → 1");
  });

  test("lists and limits", () => {
    expect(resourcesError("/v1/*, /dashboard/*,*")).toBeUndefined();
    expect(resourcesError("/v1/*,v1")).toContain('"v1"');
    expect(modelListError("gpt-4o*, claude-*")).toBeUndefined();
    expect(modelListError("gpt 4")).toBeDefined();
    expect(ipListError("10.0.0.0/8, 192.0.2.7, ::1, 2001:db8::/32")).toBeUndefined();
    for (const bad of ["10.0.0.256", "10.0.0.0/33", "host.example", "1.2.3.4/8/9"]) expect(ipListError(bad)).toBeDefined();
    expect(limitError("", true, 5)).toBeUndefined();
    expect(limitError("6", true, 5)).toContain("your own limit");
    expect(limitError("1.5", true)).toContain("whole");
    expect(limitError("1.5", false)).toBeUndefined();
    expect(limitError("-1", false)).toBeDefined();
  });

  test("mapper rows keep their order through the text form GET /x-config shows, integer-like names included", () => {
    const text = rowsToMapper(rows(["b*", " 2 "], ["7", "1"], ["a*", "1"], [" ", "9"]));
    expect(text).toBe("b*=2,7=1,a*=1");
    expect(mapperToRows(text)).toEqual(rows(["b*", "2"], ["7", "1"], ["a*", "1"]));
    expect(rowsToMapper([])).toBe("");
    expect(mapperToRows("")).toEqual([]);
    expect(mapperToRows(undefined)).toEqual([]);
  });

  test("rows keep their order through the object form of a key's config (Azure deployments)", () => {
    const object = rowsToObject(rows(["b*", "2"], ["a*", "1"], [" ", "9"]));
    expect(Object.keys(object)).toEqual(["b*", "a*"]);
    expect(objectToRows(object)).toEqual(rows(["b*", "2"], ["a*", "1"]));
  });

  test("bill data: series per model and a CSV of the line items", () => {
    const usage = (requests: number) => ({ requests, prompt: 10 * requests, completion: 5 * requests, reasoning: 0 });
    const bill = {
      daily_costs: [
        { date: "2025-01-01", line_items: [{ name: "m,1", cost: 0.5, usage: usage(2) }] },
        { date: "2025-01-02", line_items: [] },
      ],
      usage_summary: { "m,1": { ...usage(2), cost: 0.5 } },
    } as unknown as BillInfo;
    expect(perModelSeries(bill, (i) => i.cost)).toEqual([{ label: "m,1", values: [0.5, 0] }]);
    expect(lineRowsCsv(lineRows(bill))).toBe(
      "date,model,requests,prompt_tokens,completion_tokens,reasoning_tokens,credits\r\n2025-01-01,\"m,1\",2,20,10,0,0.5\r\n",
    );
  });
});
