import { describe, expect, test } from "bun:test";
import { OPENAI_ENDPOINTS } from "../../src/formats/openai/endpoints.ts";
import { anthropic } from "../../src/formats/anthropic/index.ts";
import { callFit } from "../../src/gateway/translation.ts";
import { keyFormats, speaks } from "../../src/routing/key-formats.ts";
import { poolKey } from "../helpers/pool-key.ts";

// Issue 16: how keys fit a call: 2 native, 1 through a translator, 0 not at all.
const messages = { family: "anthropic" as const, endpoint: anthropic.endpoints["/v1/messages"]! };
const chat = { family: "openai" as const, endpoint: OPENAI_ENDPOINTS["/v1/chat/completions"]! };
const embeddings = { family: "openai" as const, endpoint: OPENAI_ENDPOINTS["/v1/embeddings"]! };
const key = (formats: Array<"openai" | "responses" | "anthropic" | "gemini">) => poolKey({ config: { provider_type: "standard", formats } });

describe("call fit", () => {
  test("Anthropic Messages: an Anthropic key natively, a key of any other format through a translator", () => {
    const fit = callFit(messages, "m");
    expect([fit.rank(key(["anthropic"])), fit.rank(key(["openai"])), fit.rank(key(["gemini"])), fit.rank(key(["responses"]))]).toEqual([2, 1, 1, 1]);
    expect(fit.translatorFor(key(["anthropic"]).formats)).toBeUndefined();
    expect(fit.translatorFor(key(["openai"]).formats)?.upstream).toBe("openai-chat");
    expect(fit.translatorFor(key(["gemini"]).formats)?.upstream).toBe("gemini-generate");
  });

  test("a key of several formats is translated to the first of its list", () => {
    const fit = callFit(messages, "m");
    expect(fit.translatorFor(key(["responses", "openai"]).formats)?.upstream).toBe("openai-responses");
    expect(fit.translatorFor(key(["gemini", "openai"]).formats)?.upstream).toBe("gemini-generate");
    expect(fit.translatorFor(key(["openai", "gemini"]).formats)?.upstream).toBe("openai-chat");
  });

  test("OpenAI Chat is translated to Anthropic; other OpenAI endpoints have no translator", () => {
    expect(callFit(chat, "m").rank(key(["anthropic"]))).toBe(1);
    expect(callFit(embeddings, "m").rank(key(["anthropic"]))).toBe(0);
    expect(callFit(embeddings, "m").rank(key(["openai"]))).toBe(2);
  });

  test("a Vertex key speaks Anthropic for Claude models only; others reach it through its OpenAI endpoint", () => {
    const vertex = poolKey({ config: { provider_type: "vertex" } });
    expect(speaks(vertex.formats, "anthropic", "claude-sonnet-4-5")).toBe(true);
    expect(speaks(vertex.formats, "anthropic", "gemini-2.5-pro")).toBe(false);
    expect(callFit(messages, "gemini-2.5-pro").rank(vertex)).toBe(1);
    // Its own API first: a Gemini model is translated to Gemini, not to the OpenAI-compatible endpoint.
    expect(callFit(messages, "gemini-2.5-pro").translatorFor(vertex.formats)?.upstream).toBe("gemini-generate");
    expect(callFit(messages, "claude-sonnet-4-5").rank(vertex)).toBe(2);
    expect([...keyFormats("https://x.openai.azure.com", { provider_type: "azure" }).set]).toEqual(["openai", "responses"]);
  });
});
