import { describe, expect, test } from "bun:test";
import { formatCredit, formatCredits } from "../../console/src/lib/format.ts";

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
