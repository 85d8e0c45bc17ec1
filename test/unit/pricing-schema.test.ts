import { describe, expect, test } from "bun:test";
import { HttpError } from "../../src/core/errors.ts";
import { CATALOG, createPriceBook, scaleTable } from "../../src/metering/pricing/price-book.ts";
import { parsePricingTable, PRICING_MAX_BYTES, PRICING_MAX_ENTRIES } from "../../src/metering/pricing/schema.ts";

/** The 400 a value is refused with. */
function refusal(value: unknown): HttpError {
  try {
    parsePricingTable(value);
  } catch (error) {
    expect(error).toBeInstanceOf(HttpError);
    const e = error as HttpError;
    expect(e.status).toBe(400);
    expect(e.param).toBe("PRICING");
    return e;
  }
  throw new Error(`accepted: ${JSON.stringify(value)}`);
}

describe("parsePricingTable", () => {
  test("accepts every section in the catalog's structure and returns it", () => {
    const table = {
      ChatPricing: { "acme-*": { InputText: 1.5, OutputText: 6, CachedText: 0, CacheWrite: 2, ReasonText: 9, InputAudio: 1, OutputAudio: 2, InputImage: 3, OutputImage: 4 } },
      ImgPricing: { "acme-img": { Call: 0.04, Sizes: { "1024x1024": 0.05, "512x512": 0 } } },
      AudioPricing: { "acme-voice": { PerMinute: 0.006 } },
      VideoPricing: { "acme-video": { PerSecond: 0.1 } },
      CallPricing: { "acme-search": { Call: 0.01 } },
    };
    expect(parsePricingTable(table)).toEqual(table);
    expect(parsePricingTable({})).toEqual({});
  });

  test("a string holding JSON is accepted like the object", () => {
    const table = { ChatPricing: { m: { InputText: 1 } } };
    expect(parsePricingTable(JSON.stringify(table))).toEqual(table);
  });

  test("the built-in catalog obeys its own schema", () => {
    expect(parsePricingTable(CATALOG)).toEqual(CATALOG);
  });

  test("not JSON, or not an object of sections", () => {
    expect(refusal("{").message).toContain("not valid JSON");
    for (const value of [[], 5, null, "[]", '"x"']) refusal(value);
    expect(refusal({ ChatPricing: [] }).message).toContain("ChatPricing");
    expect(refusal({ ChatPricing: { m: 1 } }).message).toContain('ChatPricing["m"]');
  });

  test("an unknown section is named", () => {
    expect(refusal({ ChatPrices: {} }).message).toContain('"ChatPrices"');
  });

  test("an unknown member is named with its entry", () => {
    expect(refusal({ ChatPricing: { "gpt-x": { InputText: 1, Output: 2 } } }).message).toContain('ChatPricing["gpt-x"].Output');
    // Members of one section are unknown in another.
    expect(refusal({ ImgPricing: { img: { InputText: 1 } } }).message).toContain('ImgPricing["img"].InputText');
    expect(refusal({ ChatPricing: { m: { Sizes: {} } } }).message).toContain('ChatPricing["m"].Sizes');
  });

  test("prices must be finite, non-negative numbers", () => {
    for (const bad of [-1, -0.0001, "1", null, true, {}, Infinity, -Infinity, NaN, JSON.parse("1e400")]) {
      const e = refusal({ ChatPricing: { "gpt-y": { OutputText: bad } } });
      expect(e.message).toContain('ChatPricing["gpt-y"].OutputText');
      expect(e.message).toContain("finite, non-negative");
    }
    // The same rule inside the other sections and inside Sizes.
    expect(refusal({ AudioPricing: { a: { PerMinute: -1 } } }).message).toContain('AudioPricing["a"].PerMinute');
    expect(refusal({ ImgPricing: { i: { Sizes: { "256x256": -1 } } } }).message).toContain('ImgPricing["i"].Sizes["256x256"]');
    // A string with 1e400 in it parses to Infinity and is refused too.
    expect(refusal('{"VideoPricing":{"v":{"PerSecond":1e400}}}').message).toContain('VideoPricing["v"].PerSecond');
    // Zero is a price (free), not a missing one.
    expect(parsePricingTable({ ChatPricing: { m: { InputText: 0 } } })).toEqual({ ChatPricing: { m: { InputText: 0 } } });
  });

  test("Sizes keys are WIDTHxHEIGHT and Sizes is an object", () => {
    expect(refusal({ ImgPricing: { i: { Sizes: { large: 0.1 } } } }).message).toContain('invalid size "large"');
    expect(refusal({ ImgPricing: { i: { Sizes: { "1024×1024": 0.1 } } } }).message).toContain("1024×1024");
    expect(refusal({ ImgPricing: { i: { Sizes: 0.1 } } }).message).toContain('ImgPricing["i"].Sizes');
  });

  test("model patterns are non-blank without spaces or commas", () => {
    for (const pattern of ["", " ", "a b", "a,b"]) {
      expect(refusal({ ChatPricing: { [pattern]: { InputText: 1 } } }).message).toContain("invalid model pattern");
    }
  });

  test(`at most ${PRICING_MAX_ENTRIES} entries, counted across sections`, () => {
    const entries = (n: number, prefix: string) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, { Call: 0.01 }]));
    expect(() => parsePricingTable({ ImgPricing: entries(512, "i"), CallPricing: entries(512, "c") })).not.toThrow();
    const e = refusal({ ImgPricing: entries(512, "i"), CallPricing: entries(513, "c") });
    expect(e.message).toContain("1025 entries");
    expect(e.message).toContain("1024");
  });

  test("at most 128 KiB of JSON, as text or as an object", () => {
    expect(PRICING_MAX_BYTES).toBe(128 * 1024);
    // 600 entries of ~250 bytes each: under the entry limit, over the size limit.
    const big = { ChatPricing: Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`m${i}-${"x".repeat(220)}`, { InputText: 1 }])) };
    expect(JSON.stringify(big).length).toBeGreaterThan(PRICING_MAX_BYTES);
    expect(refusal(big).message).toContain("128 KiB");
    expect(refusal(JSON.stringify(big)).message).toContain("128 KiB");
    const small = { ChatPricing: Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`m${i}-${"x".repeat(220)}`, { InputText: 1 }])) };
    expect(JSON.stringify(small).length).toBeLessThan(PRICING_MAX_BYTES);
    expect(() => parsePricingTable(small)).not.toThrow();
  });
});

describe("createPriceBook", () => {
  test("without overrides it is the catalog; exact names beat patterns; unknown models are unpriced", () => {
    const book = createPriceBook();
    expect(book.table).toEqual(CATALOG);
    expect(book.lookup("ChatPricing", "gpt-4o-mini")).toEqual(CATALOG.ChatPricing["gpt-4o-mini"]!);
    // A dated snapshot is priced by the "gpt-4o-mini-*" pattern, not by the shorter "gpt-4o-*".
    expect(book.lookup("ChatPricing", "gpt-4o-mini-2024-07-18")).toEqual(CATALOG.ChatPricing["gpt-4o-mini-*"]!);
    expect(book.lookup("ChatPricing", "gpt-4o-2024-08-06")).toEqual(CATALOG.ChatPricing["gpt-4o-*"]!);
    expect(book.lookup("ChatPricing", "acme-1")).toBeUndefined();
    expect(book.lookup("ImgPricing", "dall-e-3")?.Sizes?.["1024x1792"]).toBe(0.08);
    expect(book.lookup("ChatPricing", "dall-e-3")).toBeUndefined();
  });

  test("an override sets only the members it names (member-level merge)", () => {
    const book = createPriceBook({ ChatPricing: { "gpt-4o-mini": { InputText: 1 } } });
    expect(book.lookup("ChatPricing", "gpt-4o-mini")).toEqual({ ...CATALOG.ChatPricing["gpt-4o-mini"], InputText: 1 });
    expect(book.table.ChatPricing["gpt-4o-mini"]!.OutputText).toBe(CATALOG.ChatPricing["gpt-4o-mini"]!.OutputText!);
    // The embedded catalog itself is never changed by a merge.
    expect(CATALOG.ChatPricing["gpt-4o-mini"]!.InputText).toBe(0.15);
    expect(createPriceBook().lookup("ChatPricing", "gpt-4o-mini")!.InputText).toBe(0.15);
  });

  test("image Sizes merge size by size", () => {
    const book = createPriceBook({ ImgPricing: { "dall-e-3": { Sizes: { "1024x1024": 0.05 } } } });
    expect(book.lookup("ImgPricing", "dall-e-3")).toEqual({ Call: 0.04, Sizes: { "1024x1024": 0.05, "1024x1792": 0.08, "1792x1024": 0.08 } });
  });

  test("an override adds models the catalog lacks, in every section", () => {
    const book = createPriceBook({
      ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } },
      CallPricing: { "acme-search": { Call: 0.01 } },
    });
    expect(book.lookup("ChatPricing", "acme-large")).toEqual({ InputText: 2, OutputText: 8 });
    expect(book.lookup("CallPricing", "acme-search")).toEqual({ Call: 0.01 });
    expect(book.table.ChatPricing["acme-*"]).toEqual({ InputText: 2, OutputText: 8 });
    // Catalog models are still there.
    expect(book.lookup("ChatPricing", "gpt-4o")).toEqual(CATALOG.ChatPricing["gpt-4o"]!);
  });

  test("pattern precedence: exact name, then the pattern with the most literal characters", () => {
    const book = createPriceBook({
      ChatPricing: {
        "*": { InputText: 0 },
        "acme-*": { InputText: 1 },
        "acme-pro-*": { InputText: 2 },
        "acme-pro-max": { InputText: 3 },
      },
    });
    expect(book.lookup("ChatPricing", "other")!.InputText).toBe(0);
    expect(book.lookup("ChatPricing", "acme-lite")!.InputText).toBe(1);
    expect(book.lookup("ChatPricing", "acme-pro-1")!.InputText).toBe(2);
    expect(book.lookup("ChatPricing", "acme-pro-max")!.InputText).toBe(3);
    // A catch-all never overrides a catalog model's more specific entry.
    expect(book.lookup("ChatPricing", "gpt-4o-mini")!.InputText).toBe(0.15);
  });
});

describe("scaleTable", () => {
  test("multiplies every price, Sizes included, and leaves the source alone", () => {
    const table = createPriceBook({ ChatPricing: { "acme-*": { InputText: 2, CachedText: 0.5 } } }).table;
    const scaled = scaleTable(table, 1.5);
    expect(scaled.ChatPricing["acme-*"]).toEqual({ InputText: 3, CachedText: 0.75 });
    expect(scaled.ImgPricing["dall-e-3"]).toEqual({ Call: 0.06, Sizes: { "1024x1024": 0.06, "1024x1792": 0.12, "1792x1024": 0.12 } });
    expect(scaled.ChatPricing["gpt-4o-mini"]!.InputText).toBe(0.225);
    expect(table.ChatPricing["acme-*"]!.InputText).toBe(2);
  });
});
