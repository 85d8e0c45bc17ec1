import { describe, expect, test } from "bun:test";
import { formatTable } from "../../src/cli/output.ts";

const rows = [
  { id: 1, provider: "https://a-very-long-upstream-host.example.com/v1/with/a/path", name: "primary" },
  { id: 22, provider: "https://short.example", name: "a rather long descriptive name" },
];
const columns = [
  { header: "ID", value: (r: (typeof rows)[number]) => r.id, align: "right" as const },
  { header: "PROVIDER", value: (r: (typeof rows)[number]) => r.provider },
  { header: "NAME", value: (r: (typeof rows)[number]) => r.name },
];

describe("CLI tables", () => {
  test("printed to a pipe, columns keep their full (capped) width", () => {
    const lines = formatTable(rows, columns, "(none)", undefined).trimEnd().split("\n");
    // Cut only at the 48-character cap of a cell.
    expect(lines[1]).toContain("https://a-very-long-upstream-host.example.com/v…");
    expect(lines[2]).toContain("a rather long descriptive name");
  });

  test("on a narrow terminal the widest columns are cut to fit, headers kept", () => {
    for (const limit of [60, 40]) {
      const lines = formatTable(rows, columns, "(none)", limit).trimEnd().split("\n");
      for (const line of lines) expect(Bun.stringWidth(line)).toBeLessThanOrEqual(limit);
      expect(lines[0]).toContain("PROVIDER");
      expect(lines[1]).toContain("…");
    }
  });

  test("a terminal too narrow for even the squeezed columns still gets every column", () => {
    const lines = formatTable(rows, columns, "(none)", 10).trimEnd().split("\n");
    expect(lines[0]!.split(/\s{2,}/)).toEqual(["ID", "PROVIDER", "NAME"]);
  });
});

describe("CLI times", () => {
  test("a server time is shown in the terminal's zone, with its offset", () => {
    const run = (tz: string) =>
      Bun.spawnSync([process.execPath, "-e", `import { time } from "./src/cli/output.ts"; console.log(time("2025-03-01T12:00:00.000Z"))`], { env: { ...process.env, TZ: tz } }).stdout.toString().trim();
    expect(run("UTC")).toBe("2025-03-01 12:00:00 +00:00");
    expect(run("Europe/Paris")).toBe("2025-03-01 13:00:00 +01:00");
    expect(run("America/New_York")).toBe("2025-03-01 07:00:00 -05:00");
    expect(run("Asia/Kolkata")).toBe("2025-03-01 17:30:00 +05:30");
  });
});

describe("CLI lines of fixed columns (--follow)", () => {
  test("every line has the header's columns, longer cells cut", async () => {
    const { fixedColumns } = await import("../../src/cli/output.ts");
    const fixed = fixedColumns([
      { header: "ID", value: (r: { id: number; name: string }) => r.id, align: "right", width: 4 },
      { header: "NAME", value: (r: { id: number; name: string }) => r.name, width: 8 },
    ]);
    expect(fixed.header).toBe("  ID  NAME");
    expect(fixed.line({ id: 7, name: "short" })).toBe("   7  short");
    expect(fixed.line({ id: 12, name: "a much longer name" })).toBe("  12  a much …");
  });
});
