/**
 * Input checks for the Provider Key endpoints (spec 2.1, 7.5). Everything here runs
 * before the repository is touched, so a refused request writes nothing. Messages
 * name the field in `param` and never quote a secret.
 */
import { promises as dns } from "node:dns";
import { BlockList, isIP } from "node:net";
import { networkInterfaces } from "node:os";
import { badRequest } from "../../core/errors.ts";
import type { ProviderConfig, ProviderType, VertexConfig } from "../../routing/provider-config.ts";
import { bodyCheck } from "../../wire/check.ts";
import { ProviderKeyCreateBody, ProviderKeyUpdateBody } from "../../wire/provider-keys.ts";
import { KEY_FORMATS, type KeyFormat } from "../../wire/constants.ts";
import { parseServiceAccount } from "../../upstreams/google-auth.ts";
import type { AddressGuard } from "../../upstreams/address-policy.ts";
import type { ProviderKeyInput } from "./repository.ts";

const MAX_SECRET_BYTES = 65_536;
/** A slow resolver must not hold an admin request for long; an unresolved name is compared by name only. */
const DNS_TIMEOUT_MS = 2000;
const DNS_CACHE_MS = 30_000;
/** Accepted by vertexBaseUrl(), so a stored location can never fail at request time. */
const VERTEX_LOCATION = /^[a-z][a-z0-9-]*[a-z0-9]$/;
const PROJECT_ID = /^[a-z0-9][a-z0-9.:-]*$/;
const CONFIG_MEMBERS: Record<ProviderType, readonly string[]> = {
  standard: ["models", "formats"],
  azure: ["models", "formats", "deployments", "api_versions"],
  vertex: ["models", "formats", "project_id", "location", "base_url", "token_uri"],
};
/** `config.models`: at most this many entries of at most MAX_MODEL_NAME characters. */
const MAX_MODELS = 1000;
const MAX_MODEL_NAME = 200;

export type CreateInput = Required<Pick<ProviderKeyInput, "level" | "provider" | "secret" | "status">> & ProviderKeyInput;

// ---------------------------------------------------------------------------
// "Must not point back to this service"
// ---------------------------------------------------------------------------

/** Where this router can be reached: its listen address and ports, and its public base URL. */
export interface SelfAddress {
  host: string;
  ports: ReadonlyArray<number | undefined>;
  baseUrl?: string;
}

export function selfAddress(config: { host: string; port: number; baseUrl?: string }, boundPort?: number): SelfAddress {
  return { host: config.host, ports: [config.port || undefined, boundPort], baseUrl: config.baseUrl };
}

const bareHost = (hostname: string) => hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "").toLowerCase();
const portOf = (url: URL) => (url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80);
const LOOPBACK = ["127.0.0.1", "::1"];
/** Addresses known without a resolver: IP literals, and localhost names (loopback whatever DNS says, RFC 6761). */
const literalAddresses = (host: string) =>
  isIP(host) ? [host] : host === "localhost" || host.endsWith(".localhost") ? LOOPBACK : [];

function blockList(addresses: Iterable<string>): BlockList {
  const list = new BlockList();
  for (const a of addresses) if (isIP(a)) list.addAddress(a, isIP(a) === 4 ? "ipv4" : "ipv6");
  return list;
}
const matches = (list: BlockList, addresses: readonly string[]) =>
  addresses.some((a) => list.check(a, isIP(a) === 4 ? "ipv4" : "ipv6"));

/** Every address of this machine (plus 0.0.0.0 and ::, which reach it): with a wildcard bind, any reaches the router. */
function localAddresses(): BlockList {
  const interfaces = Object.values(networkInterfaces()).flatMap((infos) => (infos ?? []).map((info) => info.address));
  const list = blockList(["::1", "0.0.0.0", "::", ...interfaces]);
  list.addSubnet("127.0.0.0", 8, "ipv4");
  return list;
}

/** Recent lookups: adding many keys for one upstream should not query the resolver each time. */
const lookups = new Map<string, { at: number; addresses: string[] }>();

/** IP literals as they are; names resolved. A failure is no error (the upstream may appear later): names are still compared. */
async function addressesOf(host: string): Promise<string[]> {
  if (isIP(host)) return [host];
  const cached = lookups.get(host);
  if (cached && Date.now() - cached.at < DNS_CACHE_MS) return cached.addresses;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<[]>((resolve) => {
    timer = setTimeout(() => resolve([]), DNS_TIMEOUT_MS);
  });
  const found = await Promise.race([dns.lookup(host, { all: true }).catch(() => []), timeout]);
  clearTimeout(timer);
  const addresses = [...literalAddresses(host), ...found.map((entry) => entry.address)];
  if (lookups.size > 1000) lookups.clear();
  lookups.set(host, { at: Date.now(), addresses });
  return addresses;
}

/** Refuses a URL whose host and port reach this router: its keys would send requests in a loop. */
export async function assertNotSelf(url: URL, param: string, self: SelfAddress): Promise<void> {
  const host = bareHost(url.hostname);
  const port = portOf(url);
  const targets = await addressesOf(host);
  const refuse = () => {
    throw badRequest(`${param} must not point back to this router (${host}:${port})`, param);
  };

  const listenHost = bareHost(self.host);
  if (self.ports.includes(port)) {
    if (host === listenHost) refuse();
    const wildcard = listenHost === "0.0.0.0" || listenHost === "::" || listenHost === "";
    // 0.0.0.0 and :: as a destination reach this machine, hence any listener on the port.
    if (matches(blockList(["0.0.0.0", "::"]), targets)) refuse();
    if (matches(wildcard ? localAddresses() : blockList(await addressesOf(listenHost)), targets)) refuse();
  }

  if (!self.baseUrl || !URL.canParse(self.baseUrl)) return;
  const base = new URL(self.baseUrl);
  if (portOf(base) !== port) return;
  const baseHost = bareHost(base.hostname);
  if (baseHost === host) refuse();
  // A public base name is compared by name only: its addresses may be a shared proxy or
  // CDN that also fronts real upstreams. IP literals and localhost names are exact.
  if (matches(blockList(literalAddresses(baseHost)), targets)) refuse();
}

// ---------------------------------------------------------------------------
// Field checks
// ---------------------------------------------------------------------------

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A base URL the adapters can append paths to: https, no credentials, query or fragment. Kept as sent, trimmed. */
function httpsUrl(value: unknown, param: string): string {
  if (typeof value !== "string" || value.trim() === "") throw badRequest(`${param} must be an https:// URL string`, param);
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw badRequest(`${param} is not a valid URL`, param);
  }
  if (url.protocol !== "https:") throw badRequest(`${param} must use https:// (got ${url.protocol.slice(0, 20)})`, param);
  // Credentials in the URL would be shown in every record and log line; they belong in SecretKey.
  if (url.username || url.password) throw badRequest(`${param} must not carry credentials; put them in SecretKey`, param);
  if (url.search || url.hash) throw badRequest(`${param} must be a base URL without query or fragment`, param);
  return value.trim();
}

function stringMap(value: unknown, param: string): Record<string, string> {
  if (!isObject(value)) throw badRequest(`${param} must be an object of model name to string`, param);
  for (const [model, target] of Object.entries(value)) {
    if (typeof target !== "string" || target.trim() === "") throw badRequest(`${param}["${model.slice(0, 100)}"] must be a non-empty string`, param);
  }
  return { ...(value as Record<string, string>) };
}

/** `config.models`: model names and patterns (`*`, `?`), as MODEL_MAPPER and LEVEL_MAPPER write them. */
function modelList(value: unknown): string[] {
  const param = "config.models";
  if (!Array.isArray(value)) throw badRequest(`${param} must be an array of model names or patterns`, param);
  if (value.length > MAX_MODELS) throw badRequest(`${param} may hold at most ${MAX_MODELS} entries`, param);
  const out: string[] = [];
  for (const [i, entry] of value.entries()) {
    if (typeof entry !== "string" || entry.trim() === "" || entry.length > MAX_MODEL_NAME || /[\s,]/.test(entry)) {
      throw badRequest(`${param}[${i}] must be a model name or pattern of 1 to ${MAX_MODEL_NAME} characters without spaces or commas`, param);
    }
    if (!out.includes(entry)) out.push(entry);
  }
  return out;
}

/**
 * `config.formats`: the wire formats the key speaks, each once. An empty list would make
 * the key serve nothing, which is what Status false is for.
 */
function formatList(value: unknown): KeyFormat[] {
  const param = "config.formats";
  const expected = `${param} must be a non-empty array of distinct formats among ${KEY_FORMATS.join(", ")}`;
  if (!Array.isArray(value) || value.length === 0) throw badRequest(expected, param);
  const out: KeyFormat[] = [];
  for (const [i, entry] of value.entries()) {
    if (typeof entry !== "string" || !(KEY_FORMATS as readonly string[]).includes(entry)) {
      throw badRequest(`${param}[${i}] must be one of ${KEY_FORMATS.join(", ")}`, param);
    }
    if (out.includes(entry as KeyFormat)) throw badRequest(`${param}[${i}] repeats ${entry}; ${expected}`, param);
    out.push(entry as KeyFormat);
  }
  return out;
}

/** The structure of `config`; checks that need the secret come later (checkSecret). */
function parseConfig(value: unknown): ProviderConfig {
  if (!isObject(value)) throw badRequest("config must be an object", "config");
  const type = value.provider_type ?? "standard";
  if (typeof type !== "string" || !Object.hasOwn(CONFIG_MEMBERS, type)) {
    throw badRequest(`config.provider_type must be one of ${Object.keys(CONFIG_MEMBERS).join(", ")}`, "config.provider_type");
  }
  const providerType = type as ProviderType;
  const unknown = Object.keys(value).filter((m) => m !== "provider_type" && !CONFIG_MEMBERS[providerType].includes(m));
  if (unknown.length > 0) {
    const allowed = CONFIG_MEMBERS[providerType].join(", ") || "none";
    throw badRequest(`config has unknown member(s) ${unknown.join(", ")} for provider_type ${providerType} (allowed: ${allowed})`, `config.${unknown[0]}`);
  }
  const models = {
    ...(value.models !== undefined && { models: modelList(value.models) }),
    ...(value.formats !== undefined && { formats: formatList(value.formats) }),
  };
  if (providerType === "standard") return { provider_type: "standard", ...models };
  if (providerType === "azure") {
    return {
      provider_type: "azure",
      ...models,
      ...(value.deployments !== undefined && { deployments: stringMap(value.deployments, "config.deployments") }),
      ...(value.api_versions !== undefined && { api_versions: stringMap(value.api_versions, "config.api_versions") }),
    };
  }
  const out: VertexConfig = { provider_type: "vertex", ...models };
  for (const member of ["project_id", "location", "base_url", "token_uri"] as const) {
    const v = value[member];
    if (v === undefined) continue;
    const param = `config.${member}`;
    if (typeof v !== "string" || v === "") throw badRequest(`${param} must be a non-empty string`, param);
    if (member === "base_url" || member === "token_uri") httpsUrl(v, param);
    // location and project_id become path segments of every Vertex URL.
    if (member === "location" && !VERTEX_LOCATION.test(v)) throw badRequest(`${param} may hold only a-z, 0-9 and '-' (e.g. us-central1)`, param);
    if (member === "project_id" && !PROJECT_ID.test(v)) throw badRequest(`${param} may hold only a-z, 0-9, '-', '.' and ':'`, param);
    out[member] = v;
  }
  return out;
}

/**
 * The secret against the key type. Vertex secrets are service-account key files;
 * the others are sent in a header, so control characters or edge whitespace would
 * break every request. Messages come from parseServiceAccount, which never quotes the key.
 */
function checkSecret(secret: string, config: ProviderConfig, stored: boolean): void {
  const which = stored ? "the stored SecretKey" : "SecretKey";
  if (config.provider_type === "vertex") {
    let projectId: string | undefined;
    try {
      projectId = parseServiceAccount(secret).project_id;
    } catch (error) {
      throw badRequest(`${which} must be a service-account key file for provider_type vertex: ${(error as Error).message}`, "SecretKey");
    }
    if (!config.project_id && !projectId) {
      throw badRequest("vertex keys need a project: set config.project_id or use a key file with project_id", "config.project_id");
    }
    return;
  }
  if (/[\x00-\x1f\x7f]/.test(secret) || secret.trim() !== secret) {
    throw badRequest(`${which} must be a single-line value without surrounding whitespace (it is sent in a header)`, "SecretKey");
  }
}

/**
 * Types, lengths, ranges and unknown fields are the models' (src/wire/provider-keys.ts);
 * these are the rules of single fields a schema cannot state, run in field order.
 * Creation has always reported a missing required field before an unknown one.
 */
const FIELD_RULES = {
  Provider: (provider: string) => void httpsUrl(provider, "Provider"),
  SecretKey: (secret: string) => {
    // A Vertex service-account file is about 2.4 KiB; nothing a provider issues comes near this.
    if (Buffer.byteLength(secret) > MAX_SECRET_BYTES) throw badRequest(`SecretKey must be at most ${MAX_SECRET_BYTES} bytes (64 KiB)`, "SecretKey");
  },
  config: (config: unknown) => void parseConfig(config),
};
const checkCreate = bodyCheck(ProviderKeyCreateBody, { requiredFirst: true, rules: FIELD_RULES });
const checkUpdate = bodyCheck(ProviderKeyUpdateBody, { rules: FIELD_RULES });

/** The checked fields present, as the repository's input (URLs trimmed, `config` normalised). */
function readFields(body: ProviderKeyUpdateBody): ProviderKeyInput {
  const out: ProviderKeyInput = {};
  if (body.Provider !== undefined) out.provider = httpsUrl(body.Provider, "Provider");
  if (body.SecretKey !== undefined) out.secret = body.SecretKey;
  if (body.Level !== undefined) out.level = body.Level;
  if (body.Status !== undefined) out.status = body.Status;
  if (body.NoSleep !== undefined) out.noSleep = body.NoSleep;
  if (body.Name !== undefined) out.name = body.Name;
  if (body.config !== undefined) out.config = parseConfig(body.config);
  return out;
}

/** Where a key's secret may go: not back to this router, and only where the upstream address policy allows. */
export interface UrlChecks {
  self: SelfAddress;
  guard: AddressGuard;
}

/** Refuses a URL the upstream address policy forbids (docs/api.md, "Upstream address policy"). */
async function assertAllowedAddress(url: URL, param: string, guard: AddressGuard): Promise<void> {
  const refusal = await guard.check(url);
  if (refusal) throw badRequest(`${param} may not be used: ${refusal}`, param);
}

/**
 * URLs of the input that requests (or token exchanges) would be sent to: the provider,
 * a Vertex key's base_url and token_uri (config's, and the key file's). `secret` is the
 * key file the write leaves in force: the new one, or the stored one when only the config
 * changes (a key whose type becomes vertex, or whose config.token_uri is dropped, starts
 * sending its assertion to the stored file's token_uri, which was never checked as such).
 */
async function assertUrlsAllowed(input: ProviderKeyInput, checks: UrlChecks, config: ProviderConfig | undefined, secret: string | undefined): Promise<void> {
  const urls: Array<[string, string]> = [];
  if (input.provider) urls.push([input.provider, "Provider"]);
  if (input.config?.provider_type === "vertex") {
    if (input.config.base_url) urls.push([input.config.base_url, "config.base_url"]);
    if (input.config.token_uri) urls.push([input.config.token_uri, "config.token_uri"]);
  }
  if (secret !== undefined && config?.provider_type === "vertex") {
    // checkSecret parsed it already: its token_uri is https (or absent, Google's default).
    const fileTokenUri = parseServiceAccount(secret).token_uri;
    if (fileTokenUri) urls.push([fileTokenUri, "SecretKey"]);
  }
  for (const [value, param] of urls) {
    const url = new URL(value);
    await assertNotSelf(url, param, checks.self);
    await assertAllowedAddress(url, param, checks.guard);
  }
}

export async function validateCreate(body: Record<string, unknown>, checks: UrlChecks): Promise<CreateInput> {
  const input = readFields(checkCreate(body));
  const config = input.config ?? { provider_type: "standard" };
  checkSecret(input.secret!, config, false);
  await assertUrlsAllowed(input, checks, config, input.secret);
  return { ...input, config, level: input.level!, provider: input.provider!, secret: input.secret!, status: input.status! };
}

/**
 * A partial update, checked against the stored key where fields depend on each other.
 * Any subset of the fields (spec 4.1), the empty one included: it changes nothing.
 */
export async function validateUpdate(
  body: Record<string, unknown>,
  current: { config: ProviderConfig; secret: string },
  checks: UrlChecks,
): Promise<ProviderKeyInput> {
  const input = readFields(checkUpdate(body));
  // A new config is checked against the (possibly new) secret; a new secret against the (possibly new) type.
  if (input.config !== undefined || input.secret !== undefined) {
    checkSecret(input.secret ?? current.secret, input.config ?? current.config, input.secret === undefined);
  }
  const secretInForce = input.secret ?? (input.config !== undefined ? current.secret : undefined);
  await assertUrlsAllowed(input, checks, input.config ?? current.config, secretInForce);
  return input;
}
