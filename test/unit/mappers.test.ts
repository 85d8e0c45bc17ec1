import { describe, expect, test } from "bun:test";
import {
  parseLevelMapper,
  parseModelMapper,
  parseSwitchOver,
  readMapperEntries,
  writeMapperEntries,
} from "../../src/admin/config/mappers.ts";
import { HttpError } from "../../src/core/errors.ts";
import { CONFIG_ITEMS, itemDef } from "../../src/admin/config/items.ts";
import { mapperEntries, mapperText } from "../../src/wire/mapper-text.ts";

/** Runs `fn`, expecting a 400 HttpError whose param is `item` and whose message mentions `mention`. */
function expectRefused(fn: () => unknown, item: string, mention?: string): HttpError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(HttpError);
  const error = caught as HttpError;
  expect(error.status).toBe(400);
  expect(error.param).toBe(item);
  if (mention !== undefined) expect(error.message).toContain(mention);
  return error;
}

describe("readMapperEntries", () => {
  test("the string form keeps order and trims whitespace around entries and both sides", () => {
    expect(readMapperEntries("X", " b = 2 ,a=1,  c-*=x  ")).toEqual([
      { left: "b", right: "2" },
      { left: "a", right: "1" },
      { left: "c-*", right: "x" },
    ]);
  });

  test("empty strings and empty entries mean no entries", () => {
    expect(readMapperEntries("X", "")).toEqual([]);
    expect(readMapperEntries("X", " , ,")).toEqual([]);
    expect(readMapperEntries("X", "a=1,,b=2,")).toEqual([
      { left: "a", right: "1" },
      { left: "b", right: "2" },
    ]);
  });

  test("the object form keeps order, trims, and accepts numbers as values", () => {
    expect(readMapperEntries("X", { " z ": " y ", "a*": "b", m: 3 })).toEqual([
      { left: "z", right: "y" },
      { left: "a*", right: "b" },
      { left: "m", right: "3" },
    ]);
    expect(readMapperEntries("X", {})).toEqual([]);
  });

  test.each(["a", "=b", "a=", "a=b=c", " = "])("malformed string entry %p is refused, naming item and entry", (entry) => {
    expectRefused(() => readMapperEntries("MODEL_MAPPER", `ok=fine,${entry}`), "MODEL_MAPPER", `"${entry.trim()}"`);
  });

  test("malformed object entries are refused, naming the entry", () => {
    expectRefused(() => readMapperEntries("X", { a: "" }), "X", '"a"');
    expectRefused(() => readMapperEntries("X", { "": "b" }), "X");
    expectRefused(() => readMapperEntries("X", { a: "b=c" }), "X", '"a"');
    expectRefused(() => readMapperEntries("X", { "a=b": "c" }), "X", '"a=b"');
    expectRefused(() => readMapperEntries("X", { a: "b,c" }), "X", '"a"');
    expectRefused(() => readMapperEntries("X", { a: true }), "X", '"a"');
    expectRefused(() => readMapperEntries("X", { a: null }), "X", '"a"');
    expectRefused(() => readMapperEntries("X", { a: { b: "c" } }), "X", '"a"');
  });

  test.each([[null], [5], [true], [["a=b"]]])("a value that is neither string nor object (%p) is refused", (value) => {
    expectRefused(() => readMapperEntries("LEVEL_MAPPER", value), "LEVEL_MAPPER");
  });

  test("writeMapperEntries is the inverse of the string form", () => {
    const entries = readMapperEntries("X", "b=2, a = 1");
    expect(writeMapperEntries(entries)).toBe("b=2,a=1");
    expect(readMapperEntries("X", writeMapperEntries(entries))).toEqual(entries);
    expect(writeMapperEntries([])).toBe("");
  });
});

describe("parseModelMapper", () => {
  test("string and object forms give the same entries and rules", () => {
    const fromString = parseModelMapper("gpt-4*=gpt-4o, claude = claude-3-7-sonnet");
    const fromObject = parseModelMapper({ "gpt-4*": "gpt-4o", claude: "claude-3-7-sonnet" });
    expect(fromObject.entries).toEqual(fromString.entries);
    expect(fromString.rules.map((r) => [r.pattern.source, r.pattern.exact, r.target])).toEqual([
      ["gpt-4*", false, "gpt-4o"],
      ["claude", true, "claude-3-7-sonnet"],
    ]);
  });

  test("a target containing * is refused; a source pattern is fine", () => {
    expectRefused(() => parseModelMapper("gpt-*=gpt-4*"), "MODEL_MAPPER", "gpt-*=gpt-4*");
    expectRefused(() => parseModelMapper({ a: "*" }), "MODEL_MAPPER");
    expect(parseModelMapper("*=gpt-4o").rules[0]!.pattern.literals).toBe(0);
  });

  test("malformed entries are refused with the item as param", () => {
    expectRefused(() => parseModelMapper("a=b,c"), "MODEL_MAPPER", '"c"');
  });
});

describe("parseLevelMapper", () => {
  test("levels are positive integers, from strings or numbers", () => {
    expect(parseLevelMapper("gpt-*=2, claude-*=1").rules.map((r) => [r.pattern.source, r.level])).toEqual([
      ["gpt-*", 2],
      ["claude-*", 1],
    ]);
    expect(parseLevelMapper({ "gemini-*": 3 }).rules[0]!.level).toBe(3);
  });

  test.each(["0", "-1", "1.5", "two", "1e2", " "])("level %p is refused", (level) => {
    const value = level.trim() === "" ? { m: level } : `m=${level}`;
    expectRefused(() => parseLevelMapper(value), "LEVEL_MAPPER");
  });

  test("non-positive and non-integer numbers in the object form are refused", () => {
    expectRefused(() => parseLevelMapper({ m: 0 }), "LEVEL_MAPPER", '"m=0"');
    expectRefused(() => parseLevelMapper({ m: -2 }), "LEVEL_MAPPER");
    expectRefused(() => parseLevelMapper({ m: 1.5 }), "LEVEL_MAPPER");
    expectRefused(() => parseLevelMapper({ m: Number.MAX_SAFE_INTEGER + 2 }), "LEVEL_MAPPER");
  });
});

describe("parseSwitchOver", () => {
  test("primary → backup pairs, string and object forms", () => {
    expect([...parseSwitchOver("1=2, 3=4").backups]).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect([...parseSwitchOver({ "1": 2, "3": "4" }).backups]).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(parseSwitchOver("").backups.size).toBe(0);
  });

  test("chains are allowed", () => {
    expect([...parseSwitchOver("1=2,2=3").backups]).toEqual([
      [1, 2],
      [2, 3],
    ]);
    expect(parseSwitchOver("3=4,1=2,2=3").backups.size).toBe(3);
    // Two primaries may share a backup.
    expect(parseSwitchOver("1=3,2=3").backups.size).toBe(2);
  });

  test("a Level switching to itself is refused", () => {
    expectRefused(() => parseSwitchOver("2=2"), "SWITCH_OVER", "2=2");
  });

  test("a primary with two backups is refused", () => {
    expectRefused(() => parseSwitchOver("1=2,1=3"), "SWITCH_OVER", "Level 1");
  });

  test.each(["1=2,2=1", "1=2,2=3,3=1", "5=6,1=2,2=3,3=2"])("cycle %p is refused", (value) => {
    expectRefused(() => parseSwitchOver(value), "SWITCH_OVER", "loops");
  });

  test("levels must be positive integers on both sides", () => {
    expectRefused(() => parseSwitchOver("0=1"), "SWITCH_OVER");
    expectRefused(() => parseSwitchOver("1=0"), "SWITCH_OVER");
    expectRefused(() => parseSwitchOver("a=1"), "SWITCH_OVER");
    expectRefused(() => parseSwitchOver("1=2.5"), "SWITCH_OVER");
  });
});

describe("the export of the mapper items (GET /x-config)", () => {
  const written: Array<[string, unknown]> = [
    ["MODEL_MAPPER", " gpt-4* = gpt-4o , 7=real-b, __proto__=p, a b=c\u0000d"],
    ["MODEL_MAPPER", { "gpt-x": "real-a", "7": "real-b", "3": "real-c" }],
    ["LEVEL_MAPPER", "claude-*=2,42=3,10=4,*=1"],
    ["LEVEL_MAPPER", { "m-*": 3 }],
    ["SWITCH_OVER", "3=1,2=3"],
    ["MODEL_MAPPER", ""],
    ["LEVEL_MAPPER", {}],
  ];

  test.each(written)("%s %p exports the stored entries as text that writes back unchanged", (item, value) => {
    const def = itemDef(item);
    const stored = def.normalise(value);
    const exported = def.exported(stored);
    expect(typeof exported).toBe("string");
    expect(exported).toBe(stored);
    expect(def.normalise(exported)).toBe(stored);
    // What a client reads from it is what the router reads.
    expect(mapperEntries(exported)).toEqual(readMapperEntries(item, stored));
  });

  test("integer-like names keep the order written", () => {
    expect(CONFIG_ITEMS.LEVEL_MAPPER!.exported(CONFIG_ITEMS.LEVEL_MAPPER!.normalise("b-*=2,42=3,10=4"))).toBe("b-*=2,42=3,10=4");
  });

  test("a repeated source already stored is exported as routing reads it: the first", () => {
    expect(CONFIG_ITEMS.MODEL_MAPPER!.exported("a=x,b=y,a=z")).toBe("a=x,b=y");
    expect(CONFIG_ITEMS.MODEL_MAPPER!.sameValue!("a=x,b=y,a=z", "a=x,b=y")).toBe(true);
    expect(CONFIG_ITEMS.MODEL_MAPPER!.sameValue!("a=x,b=y,a=z", "a=z,b=y")).toBe(false);
  });

  test("the clients' reader takes the text, an earlier object export, and nothing else", () => {
    expect(mapperEntries("a=b,7=c")).toEqual([{ left: "a", right: "b" }, { left: "7", right: "c" }]);
    expect(mapperEntries({ a: "b", n: 2 })).toEqual([{ left: "a", right: "b" }, { left: "n", right: "2" }]);
    expect(mapperEntries(undefined)).toEqual([]);
    expect(mapperEntries("")).toEqual([]);
    expect(mapperText([{ left: "a", right: "b" }, { left: "7", right: "c" }])).toBe("a=b,7=c");
  });
});
