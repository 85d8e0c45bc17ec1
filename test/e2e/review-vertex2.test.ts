import { describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import type { PoolKey } from "../../src/routing/pool-key.ts";
import { createVertexAdapter } from "../../src/upstreams/vertex.ts";

/**
 * Loose ends of Vertex AI keys: what the adapter keeps of a key's service account, a key
 * file that no longer parses at call time, and the key test's token exchange.
 */

function serviceAccount(tokenUri: string, extra: Record<string, string> = {}): string {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048, privateKeyEncoding: { type: "pkcs8", format: "pem" }, publicKeyEncoding: { type: "spki", format: "pem" } });
  return JSON.stringify({ type: "service_account", project_id: "proj-1", private_key: privateKey, client_email: "router@proj-1.iam.gserviceaccount.com", token_uri: tokenUri, ...extra });
}

describe("Vertex credentials held by the adapter", () => {
  test("a Vertex key's parsed service account (its private key) is not kept once the key is gone", async () => {
    // Built at run time; the test holds only its stem, so "<stem>-key" is in the heap only while the key file is.
    const marker = ["vx2", "gone", Date.now().toString(36), Math.random().toString(36).slice(2)].join("-");
    const adapter = createVertexAdapter();
    // In a scope of its own, so nothing here holds the key once it has left the pool.
    await (async () => {
      const key = {
        id: 424242,
        name: "gone",
        level: 1,
        provider: "https://aiplatform.googleapis.com",
        secret: serviceAccount("https://127.0.0.1:9/token", { private_key_id: `${marker}-key` }),
        config: { provider_type: "vertex", location: "us-east5", base_url: "https://127.0.0.1:9" },
      } as unknown as PoolKey;
      await adapter
        .prepare(key, { family: "gemini", method: "POST", path: "/v1beta/models/m:generateContent", search: "", model: "m", stream: false, json: {}, bytes: undefined, headers: new Headers() })
        .then(
          () => expect.unreachable("the token endpoint is a closed port"),
          () => {},
        );
    })();
    // A few collections apart: the collector scans stacks conservatively, so one may miss.
    for (let i = 0; i < 5; i++) {
      await Bun.sleep(50);
      Bun.gc(true);
    }
    expect(Bun.generateHeapSnapshot("v8").includes(`${marker}-key`)).toBe(false);
    // The adapter itself lives on (as it does for the process's life).
    expect(adapter.supports).toBeFunction();
  });
});
