import { describe, expect, test } from "bun:test";
import { compileRouting } from "../../src/admin/config/items.ts";
import { DEFAULT_LEVEL, routeModel } from "../../src/routing/route-model.ts";

const routing = (items: Record<string, string>) => compileRouting(new Map(Object.entries(items)));

describe("routeModel", () => {
  test("with no configuration the model passes through to Level 1", () => {
    expect(DEFAULT_LEVEL).toBe(1);
    expect(routeModel(routing({}), "gpt-4o")).toEqual({ effectiveModel: "gpt-4o", level: 1 });
  });

  test("a call without a model goes to Level 1 with no effective model", () => {
    const config = routing({ MODEL_MAPPER: "*=x", LEVEL_MAPPER: "*=3" });
    expect(routeModel(config, undefined)).toEqual({ effectiveModel: undefined, level: 1 });
  });

  test("MODEL_MAPPER: an exact entry beats any pattern, even a later one", () => {
    const config = routing({ MODEL_MAPPER: "gpt-4o*=pattern-target,gpt-4o-mini=exact-target,*=catch-all" });
    expect(routeModel(config, "gpt-4o-mini").effectiveModel).toBe("exact-target");
    expect(routeModel(config, "gpt-4o-2024").effectiveModel).toBe("pattern-target");
    expect(routeModel(config, "other").effectiveModel).toBe("catch-all");
  });

  test("MODEL_MAPPER: the pattern with more literal characters wins regardless of order", () => {
    const config = routing({ MODEL_MAPPER: "gpt-*=short,gpt-4o-*=long" });
    expect(routeModel(config, "gpt-4o-mini").effectiveModel).toBe("long");
    expect(routeModel(config, "gpt-3.5").effectiveModel).toBe("short");
  });

  test("MODEL_MAPPER: equally specific patterns go to the earliest entry", () => {
    expect(routeModel(routing({ MODEL_MAPPER: "ab*=first,*bc=second" }), "abc").effectiveModel).toBe("first");
    expect(routeModel(routing({ MODEL_MAPPER: "*bc=second,ab*=first" }), "abc").effectiveModel).toBe("second");
  });

  test("an unmapped model keeps its name", () => {
    expect(routeModel(routing({ MODEL_MAPPER: "gpt-*=x" }), "claude-3").effectiveModel).toBe("claude-3");
  });

  test("LEVEL_MAPPER is applied to the effective model, not the requested one", () => {
    const config = routing({
      MODEL_MAPPER: "alias=claude-3-7-sonnet",
      LEVEL_MAPPER: "alias=5,claude-*=2",
    });
    expect(routeModel(config, "alias")).toEqual({ effectiveModel: "claude-3-7-sonnet", level: 2 });
  });

  test("LEVEL_MAPPER uses the same specificity rules: exact, then longest literal, then earliest", () => {
    const config = routing({ LEVEL_MAPPER: "*=9,gpt-*=2,gpt-4o*=3,gpt-4o-mini=4,*-mini=5" });
    expect(routeModel(config, "gpt-4o-mini").level).toBe(4);
    expect(routeModel(config, "gpt-4o").level).toBe(3);
    expect(routeModel(config, "gpt-3.5").level).toBe(2);
    expect(routeModel(config, "o4-mini").level).toBe(5);
    expect(routeModel(config, "llama").level).toBe(9);
    expect(routeModel(routing({ LEVEL_MAPPER: "ab*=2,*bc=3" }), "abc").level).toBe(2);
  });

  test("a model no LEVEL_MAPPER entry matches goes to Level 1", () => {
    const config = routing({ LEVEL_MAPPER: "gpt-*=2" });
    expect(routeModel(config, "claude-3").level).toBe(1);
  });
});
