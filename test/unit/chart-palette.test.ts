import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PALETTE } from "../../console/src/ui/palette.ts";

/** WCAG relative luminance of a #rrggbb colour. */
function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255).map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
}

function contrast(a: string, b: string): number {
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (light! + 0.05) / (dark! + 0.05);
}

test("every chart series colour keeps 3:1 against the chart's card in the light and the dark theme (WCAG 1.4.11)", () => {
  const css = readFileSync(join(import.meta.dir, "..", "..", "console", "src", "styles.css"), "utf8");
  const cards = [...css.matchAll(/--card:\s*(#[0-9a-fA-F]{6})/g)].map((m) => m[1]!);
  expect(cards.length).toBe(2);
  for (const card of cards) for (const colour of PALETTE) expect({ colour, card, ok: contrast(colour, card) >= 3 }).toEqual({ colour, card, ok: true });
});
