import { expect, test } from "bun:test";
import { extractApiKey } from "../../src/http/auth.ts";
import { familyOf } from "../../src/formats/registry.ts";

const req = (headers: Record<string, string>) => new Request("http://x/", { headers });

test("Bearer works for every family; x-api-key only for Anthropic, x-goog-api-key only for Gemini", () => {
  expect(extractApiKey(req({ authorization: "Bearer k1" }), "openai")).toBe("k1");
  expect(extractApiKey(req({ authorization: "bearer k1" }), "gemini")).toBe("k1");
  expect(extractApiKey(req({ "x-api-key": "k2" }), "anthropic")).toBe("k2");
  expect(extractApiKey(req({ "x-api-key": "k2" }), "openai")).toBeUndefined();
  expect(extractApiKey(req({ "x-goog-api-key": "k3" }), "gemini")).toBe("k3");
  expect(extractApiKey(req({ "x-goog-api-key": "k3" }), "anthropic")).toBeUndefined();
  expect(extractApiKey(req({ authorization: "Basic abc" }), "openai")).toBeUndefined();
});

test("paths map to the family whose SDK calls them", () => {
  expect(familyOf("/v1/chat/completions")).toBe("openai");
  expect(familyOf("/v1/models")).toBe("openai");
  expect(familyOf("/x-keys")).toBe("openai");
  expect(familyOf("/v1/messages")).toBe("anthropic");
  expect(familyOf("/v1/messages/count_tokens")).toBe("anthropic");
  expect(familyOf("/v1beta/models/gemini-2.5-pro:generateContent")).toBe("gemini");
  expect(familyOf("/v1/models/gemini-2.5-pro:streamGenerateContent")).toBe("gemini");
  expect(familyOf("/v1/models/gpt-4o")).toBe("openai");
});
