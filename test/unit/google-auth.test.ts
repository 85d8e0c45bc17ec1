import { expect, test } from "bun:test";
import { generateKeyPairSync, verify } from "node:crypto";
import {
  createAccessTokenProvider,
  parseServiceAccount,
  vertexBaseUrl,
  type ServiceAccount,
} from "../../src/upstreams/google-auth.ts";
import { AddressRefusedError } from "../../src/upstreams/address-policy.ts";

const { privateKey, publicKey } = generateKeyPairSync("rsa", {
  modulusLength: 2048,
  privateKeyEncoding: { type: "pkcs8", format: "pem" },
  publicKeyEncoding: { type: "spki", format: "pem" },
});
const other = generateKeyPairSync("rsa", {
  modulusLength: 2048,
  privateKeyEncoding: { type: "pkcs8", format: "pem" },
  publicKeyEncoding: { type: "spki", format: "pem" },
});

const DEFAULT_TOKEN_URI = "https://oauth2.googleapis.com/token";
const SCOPE = "https://www.googleapis.com/auth/cloud-platform";

/** A line from the middle of the PEM body: if any of it leaks, this will show up. */
const keyBodyLines = privateKey
  .split("\n")
  .filter((line) => line !== "" && !line.startsWith("-----"));

function keyFile(overrides: Record<string, unknown> = {}): string {
  return JSON.stringify({
    type: "service_account",
    project_id: "proj-1",
    private_key_id: "kid-123",
    private_key: privateKey,
    client_email: "router@proj-1.iam.gserviceaccount.com",
    client_id: "1234567890",
    auth_uri: "https://accounts.google.com/o/oauth2/auth",
    token_uri: DEFAULT_TOKEN_URI,
    ...overrides,
  });
}

function expectNoKeyMaterial(message: string): void {
  expect(message).not.toContain("PRIVATE KEY");
  for (const line of keyBodyLines) expect(message).not.toContain(line);
}

function decodeSegment(segment: string): Record<string, unknown> {
  const value: unknown = JSON.parse(Buffer.from(segment, "base64url").toString("utf8"));
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("segment is not an object");
  return value as Record<string, unknown>;
}

interface Exchange {
  url: string;
  header: Record<string, unknown>;
  claims: Record<string, unknown>;
  assertion: string;
}

interface FakeEndpoint {
  fetch: typeof fetch;
  exchanges: Exchange[];
  /** Resolves each pending response when set; otherwise responses are immediate. */
  gate?: Promise<void>;
}

/**
 * Stands in for Google's token endpoint: checks the form body, verifies the JWT's RS256 signature
 * with `verifyKey`, checks the claims, and hands out tokens "tok-1", "tok-2", ...
 */
function fakeTokenEndpoint(opts: { expectedAud?: string; expiresIn?: number; verifyKey?: string } = {}): FakeEndpoint {
  const endpoint: FakeEndpoint = {
    exchanges: [],
    fetch: (async () => new Response()) as unknown as typeof fetch,
  };
  const impl = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (init?.method !== "POST") throw new Error(`expected POST, got ${String(init?.method)}`);
    const headers = new Headers(init.headers);
    if (headers.get("content-type") !== "application/x-www-form-urlencoded") {
      throw new Error(`bad content-type ${String(headers.get("content-type"))}`);
    }
    if (typeof init.body !== "string") throw new Error("expected a string body");
    const form = new URLSearchParams(init.body);
    if ([...form.keys()].sort().join(",") !== "assertion,grant_type") throw new Error(`unexpected form fields in ${init.body}`);
    if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") throw new Error("bad grant_type");
    const assertion = form.get("assertion") ?? "";
    const parts = assertion.split(".");
    if (parts.length !== 3) throw new Error("assertion is not a compact JWT");
    const [h, c, s] = parts as [string, string, string];
    for (const part of parts) {
      if (!/^[A-Za-z0-9_-]+$/.test(part)) throw new Error("JWT segment is not unpadded base64url");
    }
    const valid = verify(
      "sha256",
      Buffer.from(`${h}.${c}`),
      opts.verifyKey ?? publicKey,
      Buffer.from(s, "base64url"),
    );
    if (!valid) return Response.json({ error: "invalid_grant", error_description: "Invalid JWT Signature." }, { status: 400 });
    const header = decodeSegment(h);
    const claims = decodeSegment(c);
    if (header.alg !== "RS256" || header.typ !== "JWT") throw new Error(`bad header ${JSON.stringify(header)}`);
    if (claims.iss !== "router@proj-1.iam.gserviceaccount.com") throw new Error(`bad iss ${String(claims.iss)}`);
    if (claims.scope !== SCOPE) throw new Error(`bad scope ${String(claims.scope)}`);
    if (claims.aud !== (opts.expectedAud ?? DEFAULT_TOKEN_URI) || claims.aud !== url) throw new Error(`bad aud ${String(claims.aud)} for ${url}`);
    if (typeof claims.iat !== "number" || typeof claims.exp !== "number" || claims.exp - claims.iat !== 3600) {
      throw new Error(`bad iat/exp ${String(claims.iat)}/${String(claims.exp)}`);
    }
    endpoint.exchanges.push({ url, header, claims, assertion });
    if (endpoint.gate) await endpoint.gate;
    return Response.json({
      access_token: `tok-${endpoint.exchanges.length}`,
      expires_in: opts.expiresIn ?? 3599,
      token_type: "Bearer",
    });
  };
  endpoint.fetch = impl as typeof fetch;
  return endpoint;
}

function account(overrides: Record<string, unknown> = {}): ServiceAccount {
  return parseServiceAccount(keyFile(overrides));
}

test("the assertion is a correctly signed RS256 JWT with the expected header and claims", async () => {
  const endpoint = fakeTokenEndpoint();
  const clock = 1_700_000_000_123;
  const provider = createAccessTokenProvider({ account: account(), fetch: endpoint.fetch, now: () => clock });
  expect(await provider.token()).toBe("tok-1");
  expect(endpoint.exchanges).toHaveLength(1);
  const ex = endpoint.exchanges[0]!;
  expect(ex.header).toEqual({ alg: "RS256", typ: "JWT", kid: "kid-123" });
  expect(ex.claims).toEqual({
    iss: "router@proj-1.iam.gserviceaccount.com",
    scope: SCOPE,
    aud: DEFAULT_TOKEN_URI,
    iat: 1_700_000_000,
    exp: 1_700_003_600,
  });
});

test("the header has no kid when the key file has no private_key_id, and an explicit tokenUri is the audience", async () => {
  const uri = "https://token.test.example/oauth2/token";
  const endpoint = fakeTokenEndpoint({ expectedAud: uri });
  const acct = account({ private_key_id: undefined });
  const provider = createAccessTokenProvider({ account: acct, tokenUri: uri, fetch: endpoint.fetch });
  expect(await provider.token()).toBe("tok-1");
  expect(endpoint.exchanges[0]?.url).toBe(uri);
  expect(endpoint.exchanges[0]?.header).toEqual({ alg: "RS256", typ: "JWT" });
});

test("the account's token_uri is used when no tokenUri option is given", async () => {
  const uri = "https://oauth2.test.example/token";
  const endpoint = fakeTokenEndpoint({ expectedAud: uri });
  const provider = createAccessTokenProvider({ account: account({ token_uri: uri }), fetch: endpoint.fetch });
  expect(await provider.token()).toBe("tok-1");
  expect(endpoint.exchanges[0]?.claims.aud).toBe(uri);
});

test("a token is cached: the second call makes no new exchange", async () => {
  const endpoint = fakeTokenEndpoint();
  let clock = 1_000_000;
  const provider = createAccessTokenProvider({ account: account(), fetch: endpoint.fetch, now: () => clock });
  expect(await provider.token()).toBe("tok-1");
  clock += 10_000;
  expect(await provider.token()).toBe("tok-1");
  expect(endpoint.exchanges).toHaveLength(1);
});

test("the token is refreshed once the clock passes expiry minus 60 s, not before", async () => {
  const endpoint = fakeTokenEndpoint({ expiresIn: 3600 });
  const start = 5_000_000;
  let clock = start;
  const provider = createAccessTokenProvider({ account: account(), fetch: endpoint.fetch, now: () => clock });
  expect(await provider.token()).toBe("tok-1");
  clock = start + (3600 - 60) * 1000 - 1; // just inside the margin
  expect(await provider.token()).toBe("tok-1");
  expect(endpoint.exchanges).toHaveLength(1);
  clock = start + (3600 - 60) * 1000; // stale
  expect(await provider.token()).toBe("tok-2");
  expect(endpoint.exchanges).toHaveLength(2);
  // The new assertion is issued at the new time.
  expect(endpoint.exchanges[1]?.claims.iat).toBe(Math.floor(clock / 1000));
});

test("invalidate() forces a new exchange on the next call", async () => {
  const endpoint = fakeTokenEndpoint();
  const provider = createAccessTokenProvider({ account: account(), fetch: endpoint.fetch, now: () => 1_000 });
  expect(await provider.token()).toBe("tok-1");
  provider.invalidate();
  expect(await provider.token()).toBe("tok-2");
  expect(await provider.token()).toBe("tok-2");
  expect(endpoint.exchanges).toHaveLength(2);
});

test("concurrent token() calls share a single exchange", async () => {
  const endpoint = fakeTokenEndpoint();
  let release: () => void = () => {};
  endpoint.gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const provider = createAccessTokenProvider({ account: account(), fetch: endpoint.fetch, now: () => 1_000 });
  const pending = [provider.token(), provider.token(), provider.token(), provider.token()];
  await Bun.sleep(5);
  expect(endpoint.exchanges).toHaveLength(1);
  release();
  expect(await Promise.all(pending)).toEqual(["tok-1", "tok-1", "tok-1", "tok-1"]);
  expect(await provider.token()).toBe("tok-1");
  expect(endpoint.exchanges).toHaveLength(1);
});

test("an error response gives a message with the status and Google's error, without key material or the assertion", async () => {
  // The endpoint verifies with a different public key, so it answers 400 invalid_grant.
  const endpoint = fakeTokenEndpoint({ verifyKey: other.publicKey });
  let seenAssertion = "";
  const spying = (async (input: RequestInfo | URL, init?: RequestInit) => {
    seenAssertion = new URLSearchParams(String(init?.body)).get("assertion") ?? "";
    return endpoint.fetch(input, init);
  }) as typeof fetch;
  const provider = createAccessTokenProvider({ account: account(), fetch: spying, now: () => 1_000 });
  let message = "";
  try {
    await provider.token();
  } catch (err) {
    message = err instanceof Error ? err.message : String(err);
  }
  expect(message).toContain("400");
  expect(message).toContain("invalid_grant");
  expect(message).toContain("Invalid JWT Signature.");
  expect(seenAssertion.length).toBeGreaterThan(100);
  expect(message).not.toContain(seenAssertion);
  expectNoKeyMaterial(message);
});

test("an error body that echoes the assertion is scrubbed, and a failure is not cached", async () => {
  let calls = 0;
  let lastAssertion = "";
  const echoing = (async (_input: RequestInfo | URL, init?: RequestInit) => {
    calls++;
    lastAssertion = new URLSearchParams(String(init?.body)).get("assertion") ?? "";
    if (calls === 1) return new Response(`upstream rejected assertion=${lastAssertion}`, { status: 503 });
    return Response.json({ access_token: "tok-ok", expires_in: 3600, token_type: "Bearer" });
  }) as typeof fetch;
  const provider = createAccessTokenProvider({ account: account(), fetch: echoing, now: () => 1_000 });
  let message = "";
  try {
    await provider.token();
  } catch (err) {
    message = err instanceof Error ? err.message : String(err);
  }
  expect(message).toContain("503");
  expect(message).toContain("upstream rejected");
  expect(lastAssertion.length).toBeGreaterThan(100);
  expect(message).not.toContain(lastAssertion);
  const segments = lastAssertion.split(".");
  expect(segments).toHaveLength(3);
  for (const segment of segments) expect(message).not.toContain(segment);
  expectNoKeyMaterial(message);
  expect(await provider.token()).toBe("tok-ok");
  expect(calls).toBe(2);
});

test("a successful response without access_token or expires_in is refused", async () => {
  const noToken = (async () => Response.json({ expires_in: 3600 })) as unknown as typeof fetch;
  await expect(createAccessTokenProvider({ account: account(), fetch: noToken }).token()).rejects.toThrow(/access_token/);
  const noExpiry = (async () => Response.json({ access_token: "x", token_type: "Bearer" })) as unknown as typeof fetch;
  await expect(createAccessTokenProvider({ account: account(), fetch: noExpiry }).token()).rejects.toThrow(/expires_in/);
});

test("parseServiceAccount accepts a Google key file and keeps the relevant fields", () => {
  const acct = parseServiceAccount(keyFile());
  expect(acct).toEqual({
    client_email: "router@proj-1.iam.gserviceaccount.com",
    private_key: privateKey,
    project_id: "proj-1",
    token_uri: DEFAULT_TOKEN_URI,
    private_key_id: "kid-123",
  });
});

function parseError(json: string): string {
  try {
    parseServiceAccount(json);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  return "(no error)";
}

test("parseServiceAccount rejects a file missing client_email or private_key, naming the field", () => {
  const noEmail = parseError(keyFile({ client_email: undefined }));
  expect(noEmail).toContain("client_email");
  expectNoKeyMaterial(noEmail);
  const noKey = parseError(keyFile({ private_key: undefined }));
  expect(noKey).toContain("private_key");
  const emptyKey = parseError(keyFile({ private_key: "" }));
  expect(emptyKey).toContain("private_key");
});

test("parseServiceAccount rejects a file that is not a service-account key", () => {
  const userCreds = parseError(keyFile({ type: "authorized_user" }));
  expect(userCreds).toContain("type");
  expect(userCreds).toContain("service_account");
  expectNoKeyMaterial(userCreds);
  const noType = parseError(keyFile({ type: undefined }));
  expect(noType).toContain("type");
  expect(parseError("[1,2,3]")).toContain("JSON object");
});

test("parseServiceAccount never quotes the private key in its errors", () => {
  // A damaged key: the PEM armour is intact but the body is truncated.
  const damaged = privateKey.slice(0, privateKey.length / 2) + "\n-----END PRIVATE KEY-----\n";
  const badKey = parseError(keyFile({ private_key: damaged }));
  expect(badKey).toContain("private_key");
  expectNoKeyMaterial(badKey);
  // Malformed JSON around a real key: the parser's message must not leak the text.
  const broken = keyFile().replace('"type"', "type");
  const badJson = parseError(broken);
  expect(badJson).toContain("JSON");
  expectNoKeyMaterial(badJson);
  // A wrong-typed optional field near the key.
  const badKid = parseError(keyFile({ private_key_id: 42 }));
  expect(badKid).toContain("private_key_id");
  expectNoKeyMaterial(badKid);
});

test("a token_uri that is not https is refused, in the key file and as the exchange's URI: the signed assertion never travels in clear", async () => {
  for (const uri of ["http://oauth2.googleapis.com/token", "http://127.0.0.1:8080/token", "ftp://oauth2.googleapis.com/token"]) {
    const message = parseError(keyFile({ token_uri: uri }));
    expect(message).toContain("token_uri");
    expect(message).toContain("https://");
    expectNoKeyMaterial(message);
  }
  // A key file stored before the rule (or a URI given directly) is refused before any exchange.
  const endpoint = fakeTokenEndpoint({ expectedAud: "http://oauth2.googleapis.com/token" });
  expect(() => createAccessTokenProvider({ account: account(), tokenUri: "http://oauth2.googleapis.com/token", fetch: endpoint.fetch })).toThrow(/https:\/\//);
  expect(() => createAccessTokenProvider({ account: { ...account(), token_uri: "http://oauth2.googleapis.com/token" }, fetch: endpoint.fetch })).toThrow(/https:\/\//);
  expect(endpoint.exchanges).toHaveLength(0);
});

test("vertexBaseUrl maps global and regional locations", () => {
  expect(vertexBaseUrl("global")).toBe("https://aiplatform.googleapis.com");
  expect(vertexBaseUrl("us-central1")).toBe("https://us-central1-aiplatform.googleapis.com");
  expect(vertexBaseUrl("europe-west4")).toBe("https://europe-west4-aiplatform.googleapis.com");
  expect(() => vertexBaseUrl("evil.example/")).toThrow(/location/);
});

test("the token exchange never follows a redirect: it asks fetch for manual redirects and fails on a 3xx", async () => {
  const inits: RequestInit[] = [];
  const fetchImpl = (async (_url: string, init: RequestInit) => {
    inits.push(init);
    return new Response(null, { status: 307, headers: { location: "http://169.254.169.254/steal" } });
  }) as unknown as typeof fetch;
  const provider = createAccessTokenProvider({ account: account(), fetch: fetchImpl });
  const error = await provider.token().catch((e: unknown) => e as Error);
  expect(error).toBeInstanceOf(Error);
  expect((error as Error).message).toContain("HTTP 307");
  expect((error as Error).message).not.toContain("169.254");
  expect(inits[0]!.redirect).toBe("manual");
});

test("the token exchange asks the upstream address policy first: a refused token URI gets nothing, not even a connection", async () => {
  let fetched = 0;
  const fetchImpl = (async () => {
    fetched++;
    return Response.json({ access_token: "t", expires_in: 3600, token_type: "Bearer" });
  }) as unknown as typeof fetch;
  const checked: string[] = [];
  const provider = createAccessTokenProvider({
    account: account(),
    tokenUri: "https://metadata.google.internal/token",
    fetch: fetchImpl,
    checkUrl: async (url) => {
      checked.push(url);
      return "metadata.google.internal is a cloud metadata service, which is never an upstream";
    },
  });
  const error = await provider.token().catch((e: unknown) => e as Error);
  expect(error).toBeInstanceOf(AddressRefusedError);
  expect(checked).toEqual(["https://metadata.google.internal/token"]);
  expect(fetched).toBe(0);
});
