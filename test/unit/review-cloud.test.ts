import { expect, test } from "bun:test";
import { vertexBaseUrl } from "../../src/upstreams/google-auth.ts";

// Google's multi-region locations (data kept within the US or the EU) have hosts of their own.
test("vertexBaseUrl sends the multi-region locations us and eu to their own hosts", () => {
  expect(vertexBaseUrl("us")).toBe("https://aiplatform.us.rep.googleapis.com");
  expect(vertexBaseUrl("eu")).toBe("https://aiplatform.eu.rep.googleapis.com");
  // Regions keep their regional host.
  expect(vertexBaseUrl("us-east5")).toBe("https://us-east5-aiplatform.googleapis.com");
});
