import { describe, expect, test } from "bun:test";
import { isJson, JsonScanner, SCAN_INVALID, SCAN_MAX_DEPTH } from "../../src/formats/json-scan.ts";
import { parsesAsJson } from "../../src/formats/json.ts";
import { generator as random } from "../helpers/seeded.ts";

/** Pieces JSON is made of, and the near-misses a scanner could get wrong. */
const ATOMS = [
  "0", "-0", "1", "-1", "12.5", "1e10", "1E-3", "-0.0e+0", "01", "1.", ".5", "-", "+1", "1e", "0x1", "Infinity", "NaN",
  "true", "false", "null", "tru", "nul", "True",
  '""', '"a"', '"\\n"', '"\\u00e9"', '"\\uD83D\\uDE00"', '"\\u12"', '"\\x41"', '"\\\'"', '"\\/"', '"\\\\"', '"a\\"b"', '"\t"', '"\u0001"', '"\u007f"', '"é"', '"\u2028"',
];
const SPACES = ["", " ", "\n", "\r\n", "\t", "  ", "\u00a0", "\f"];

function value(next: () => number, depth: number): string {
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
  const space = () => (next() < 0.7 ? "" : pick(SPACES));
  const roll = next();
  if (depth > 3 || roll < 0.45) return pick(ATOMS);
  const count = Math.floor(next() * 4);
  const items: string[] = [];
  for (let i = 0; i < count; i++) {
    const inner = value(next, depth + 1);
    items.push(roll < 0.7 ? `${space()}${inner}${space()}` : `${space()}${pick(ATOMS.filter((a) => a.startsWith('"')))}${space()}:${space()}${inner}${space()}`);
  }
  return roll < 0.7 ? `[${items.join(",")}]` : `{${items.join(",")}}`;
}

/** One random edit: a character dropped, doubled, or replaced by a structural one. */
function mutate(text: string, next: () => number): string {
  if (text.length === 0) return text;
  const at = Math.floor(next() * text.length);
  const roll = next();
  if (roll < 0.33) return text.slice(0, at) + text.slice(at + 1);
  if (roll < 0.66) return text.slice(0, at + 1) + text.slice(at);
  const swaps = ['"', "\\", ",", ":", "[", "]", "{", "}", " ", "\n", "0", "e", "u", "\u0000"];
  return text.slice(0, at) + swaps[Math.floor(next() * swaps.length)] + text.slice(at + 1);
}

describe("the JSON scanner accepts what JSON.parse accepts", () => {
  test("documents of every kind, well-formed and broken, agree with JSON.parse (20,000 seeded cases)", () => {
    const disagreements: string[] = [];
    let valid = 0;
    for (let seed = 1; seed <= 20_000; seed++) {
      const next = random(seed);
      let text = `${next() < 0.2 ? " " : ""}${value(next, 0)}${next() < 0.2 ? "\n" : ""}`;
      if (next() < 0.5) text = mutate(text, next);
      if (next() < 0.2) text = mutate(text, next);
      const verdict = isJson(text);
      if (parsesAsJson(text)) valid++;
      if (verdict !== parsesAsJson(text)) disagreements.push(`seed ${seed}: ${JSON.stringify(text)} scanner ${verdict}`);
    }
    expect(disagreements.slice(0, 10)).toEqual([]);
    // Both sides are exercised: thousands of documents of each kind.
    expect(valid).toBeGreaterThan(4_000);
    expect(20_000 - valid).toBeGreaterThan(4_000);
  });

  test("strings with escapes sparse and dense, valid and not, agree with JSON.parse (10,000 seeded cases)", () => {
    const pieces = ["a", "é", "\u2028", "x".repeat(30), "\\n", "\\t", '\\"', "\\\\", "\\/", "\\u00e9", "\\uD83D", "\\u12", "\\x", "\\", '"', "\n", "\u0000", "\u001f", " "];
    const disagreements: string[] = [];
    let valid = 0;
    for (let seed = 1; seed <= 10_000; seed++) {
      const next = random(seed * 7919);
      // Runs of escapes every few characters, then sparse ones, so both ways of reading a string are taken.
      const dense = next() < 0.5;
      let body = "";
      const count = Math.floor(next() * 40);
      for (let i = 0; i < count; i++) {
        const roll = next();
        if (roll < 0.92) body += pieces[Math.floor(next() * 5) + (dense || next() < 0.5 ? 4 : 0)]!;
        else body += pieces[Math.floor(next() * pieces.length)]!;
        if (!dense) body += "y".repeat(Math.floor(next() * 40));
      }
      const text = next() < 0.5 ? `"${body}"` : `["${body}", "tail\\n", {"k": "${body.slice(0, 10)}"}]`;
      if (parsesAsJson(text)) valid++;
      if (isJson(text) !== parsesAsJson(text)) disagreements.push(`seed ${seed}: ${JSON.stringify(text)}`);
    }
    expect(disagreements.slice(0, 10)).toEqual([]);
    expect(valid).toBeGreaterThan(1_000);
    expect(10_000 - valid).toBeGreaterThan(1_000);
  });

  test("real bodies: the scanner finds each value's end where JSON.parse's value ends", () => {
    const body = JSON.stringify({
      model: "m",
      messages: [
        { role: "user", content: 'code:\n\tif (a) {\n  print("x\\\\y")\n}\u00e9\ud83d\ude00' },
        { role: "assistant", content: [{ type: "text", text: "a \"quoted\" word" }], n: [1, -2.5e-3, true, null] },
      ],
      max_tokens: 10,
    });
    expect(isJson(body)).toBe(true);
    const start = body.indexOf("[");
    const end = new JsonScanner(body).value(start);
    expect(JSON.parse(body.slice(start, end))).toEqual(JSON.parse(body).messages);
    expect(body[end]).toBe(",");
  });

  test("a string's bare control character, a bad escape or a missing quote is refused", () => {
    for (const text of ['"a\nb"', '"\\q"', '"\\u00g0"', '"abc', '"\\"', '["a",]', "{\"a\" 1}", "[1 2]", "{,}", "", " ", "[] []"]) {
      expect([text, isJson(text)]).toEqual([text, false]);
      expect(parsesAsJson(text)).toBe(false);
    }
  });

  test("keys are reported with where their values start, escaped ones flagged", () => {
    const text = '{"a": 1, "b\\u0063": {"type" :"file"}, "list": [{"k": null}]}';
    const seen: Array<[string, boolean, string]> = [];
    new JsonScanner(text).value(0, (start, end, escaped, valueStart) => seen.push([text.slice(start, end), escaped, text[valueStart]!]));
    expect(seen).toEqual([
      ["a", false, "1"],
      ["b\\u0063", true, "{"],
      ["type", false, '"'],
      ["list", false, "["],
      ["k", false, "n"],
    ]);
  });

  test("nesting past the scanner's depth is left to JSON.parse, and a text that ends early is refused", () => {
    const nested = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`;
    expect(isJson(nested(SCAN_MAX_DEPTH + 1))).toBeUndefined();
    expect(isJson(nested(SCAN_MAX_DEPTH))).toBe(true);
    expect(new JsonScanner('{"a": [1, 2').value(0)).toBe(SCAN_INVALID);
  });

  test("a long string full of escapes is read in linear time", () => {
    const text = JSON.stringify('line "one"\n\tand two\\'.repeat(100_000));
    const started = performance.now();
    expect(isJson(text)).toBe(true);
    // Far above the ~10 ms it takes: a quadratic scan of 2.2 MB would take minutes.
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
