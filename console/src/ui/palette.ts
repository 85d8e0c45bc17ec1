/**
 * The colours of chart series, in order. Each keeps 3:1 against the chart's card in both
 * themes (WCAG 1.4.11, non-text contrast): white in the light theme, #111827 in the dark
 * one (styles.css `--card`); test/unit/chart-palette.test.ts checks it.
 */
export const PALETTE = ["#2563eb", "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2", "#65a30d", "#dc2626", "#737b87"];
