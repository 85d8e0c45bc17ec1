import { promises as dns } from "node:dns";
import { isIP } from "node:net";

/**
 * Where provider URLs may point (docs/api.md, "Upstream address policy"). A provider
 * secret is sent to its URL's host, so a URL that reaches a cloud metadata service, a
 * link-local or unspecified address would let whoever saves a key read what those
 * answer; in the BYOK style, where tenants save keys, private and loopback networks
 * (the operator's own) are refused too unless the operator allows them.
 *
 * Pure classification of IP literals here (every spelling URL parsing leaves:
 * IPv4-mapped and IPv4-compatible IPv6, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4
 * 2002::/16 carry an IPv4 address that is classified in turn), plus a guard that
 * resolves names, with a short cache, and applies the policy.
 */

export type AddressClass = "unspecified" | "link-local" | "metadata" | "reserved" | "loopback" | "private" | "public";

/** Classes refused whatever the deployment: nothing legitimate serves models there. */
const ALWAYS_REFUSED: ReadonlySet<AddressClass> = new Set(["unspecified", "link-local", "metadata", "reserved"]);
/** Classes refused in the BYOK style unless `--allow-private-upstreams`. */
const PRIVATE: ReadonlySet<AddressClass> = new Set(["loopback", "private"]);

/** Names of cloud metadata services, refused whatever they resolve to. */
const METADATA_NAMES = new Set(["metadata.google.internal", "metadata.goog", "metadata", "instance-data", "instance-data.ec2.internal", "metadata.azure.com", "metadata.platformequinix.com"]);

/** Metadata services with addresses outside the link-local range. */
const METADATA_IPV4 = new Set(["100.100.100.200", "192.0.0.192"]);

const DESCRIPTION: Record<Exclude<AddressClass, "public">, string> = {
  unspecified: "an unspecified address",
  "link-local": "a link-local address (where cloud metadata services answer)",
  metadata: "a cloud metadata service",
  reserved: "a reserved or multicast address",
  loopback: "a loopback address",
  private: "a private-network address",
};

function ipv4Bytes(ip: string): number[] {
  return ip.split(".").map(Number);
}

function classifyIpv4(ip: string): AddressClass {
  const [a, b, c, d] = ipv4Bytes(ip) as [number, number, number, number];
  if (METADATA_IPV4.has(ip)) return "metadata";
  if (a === 0) return "unspecified";
  if (a === 169 && b === 254) return c === 169 && d === 254 ? "metadata" : "link-local";
  if (a === 127) return "loopback";
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127)) return "private";
  // Multicast, the old class E, broadcast; 192.0.0.0/24 holds protocol assignments.
  if (a >= 224 || (a === 192 && b === 0 && c === 0)) return "reserved";
  return "public";
}

/** The 16 bytes of an IPv6 literal (`::` and a dotted IPv4 tail allowed), or undefined. */
function ipv6Bytes(ip: string): number[] | undefined {
  let text = ip.toLowerCase();
  const zone = text.indexOf("%");
  if (zone !== -1) text = text.slice(0, zone);
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(":");
  if (text.slice(lastColon + 1).includes(".")) {
    tail.push(...ipv4Bytes(text.slice(lastColon + 1)));
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groups = (part: string) => (part === "" ? [] : part.split(":"));
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - head.length - rest.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return undefined;
  const all = [...head, ...Array<string>(missing).fill("0"), ...rest];
  const bytes: number[] = [];
  for (const group of all) {
    const n = Number.parseInt(group, 16);
    if (!/^[0-9a-f]{1,4}$/.test(group) || Number.isNaN(n)) return undefined;
    bytes.push(n >> 8, n & 0xff);
  }
  if (tail.length === 4) bytes.splice(12, 4, ...tail);
  return bytes;
}

const v4 = (bytes: number[], at: number) => bytes.slice(at, at + 4).join(".");
const zeros = (bytes: number[], from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);

function classifyIpv6(ip: string): AddressClass {
  const b = ipv6Bytes(ip);
  if (!b) return "reserved";
  if (zeros(b, 0, 16)) return "unspecified";
  if (zeros(b, 0, 15) && b[15] === 1) return "loopback";
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible), 64:ff9b::a.b.c.d and 64:ff9b:1::/48 (NAT64): an IPv4 inside.
  if (zeros(b, 0, 10) && ((b[10] === 0xff && b[11] === 0xff) || (b[10] === 0 && b[11] === 0))) return classifyIpv4(v4(b, 12));
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && (zeros(b, 4, 12) || (b[4] === 0 && b[5] === 1))) return classifyIpv4(v4(b, 12));
  // 2002:AABB:CCDD::/48 (6to4) carries A.B.C.D.
  if (b[0] === 0x20 && b[1] === 0x02) return classifyIpv4(v4(b, 2));
  // fd00:ec2::254: the AWS instance metadata service over IPv6.
  if (b[0] === 0xfd && b[1] === 0x00 && b[2] === 0x0e && b[3] === 0xc2 && zeros(b, 4, 14) && b[14] === 0x02 && b[15] === 0x54) return "metadata";
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return "link-local";
  if ((b[0]! & 0xfe) === 0xfc) return "private";
  if (b[0] === 0xff) return "reserved";
  return "public";
}

/** The class of an IP literal (IPv4 or IPv6, brackets allowed); `reserved` for what does not parse. */
export function classifyAddress(ip: string): AddressClass {
  const bare = ip.replace(/^\[|\]$/g, "");
  const kind = isIP(bare);
  if (kind === 4) return classifyIpv4(bare);
  if (kind === 6) return classifyIpv6(bare);
  return "reserved";
}

export interface AddressPolicy {
  /** Private and loopback upstreams allowed: single-tenant, or BYOK with `--allow-private-upstreams`. */
  allowPrivate: boolean;
}

/** Why an address may not be an upstream under `policy`, or undefined when it may. */
export function refusalOf(address: string, policy: AddressPolicy): string | undefined {
  const kind = classifyAddress(address);
  if (kind === "public") return undefined;
  if (ALWAYS_REFUSED.has(kind)) return `${address} is ${DESCRIPTION[kind]}, which is never an upstream`;
  if (PRIVATE.has(kind) && !policy.allowPrivate) {
    return `${address} is ${DESCRIPTION[kind]}; this router refuses private and loopback upstreams (its operator may allow them with --allow-private-upstreams)`;
  }
  return undefined;
}

const bareHost = (hostname: string) => hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "").toLowerCase();

export type Resolve = (host: string) => Promise<string[]>;

/** Every address a name resolves to (the system resolver, as fetch uses); none when it does not resolve. */
export const systemResolve: Resolve = async (host) => (await dns.lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

/** How long a resolution is trusted before a connection resolves the name again. */
export const RESOLUTION_CACHE_MS = 30_000;
/** A slow resolver must not hold a request for long. */
const RESOLVE_TIMEOUT_MS = 2000;

/** A connection refused by the policy before anything was sent: the key's URL is at fault, not the call. */
export class AddressRefusedError extends Error {
  constructor(readonly reason: string) {
    super(`upstream address refused: ${reason}`);
  }
}

export interface AddressGuard {
  /**
   * Why the host of `url` may not be an upstream (a refused name, or any address it
   * resolves to), or undefined when it may. A name that does not resolve passes: the
   * connection fails on its own, and nothing can be reached through it.
   */
  check(url: string | URL): Promise<string | undefined>;
}

/** The host of an absolute http(s) URL, cheaply: the request path checks one per attempt. */
function hostOf(url: string | URL): string {
  if (typeof url !== "string") return bareHost(url.hostname);
  const authority = /^https?:\/\/([^/?#]*)/i.exec(url)?.[1];
  if (authority === undefined || authority.includes("@") || authority.includes("%")) return bareHost(new URL(url).hostname);
  const host = authority.startsWith("[") ? authority.slice(0, authority.indexOf("]") + 1) : authority.replace(/:\d*$/, "");
  // Numeric IPv4 spellings (0x7f.1, 2130706433) are what URL parsing normalises: let it.
  return /^[0-9.]+$|^0x/i.test(host) && isIP(host) === 0 ? bareHost(new URL(url).hostname) : bareHost(host);
}

export function createAddressGuard(policy: AddressPolicy, resolve: Resolve = systemResolve, now: () => number = Date.now): AddressGuard {
  /** Verdicts per host, trusted for RESOLUTION_CACHE_MS. */
  const verdicts = new Map<string, { at: number; refusal: string | undefined }>();
  const resolveBounded = async (host: string): Promise<string[]> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<string[]>((done) => {
      timer = setTimeout(() => done([]), RESOLVE_TIMEOUT_MS);
    });
    const addresses = await Promise.race([resolve(host).catch(() => []), timeout]);
    clearTimeout(timer);
    return addresses;
  };
  const judge = async (host: string): Promise<string | undefined> => {
    // The refusal names the address itself ("169.254.169.254 is a cloud metadata service").
    if (isIP(host)) return refusalOf(host, policy);
    if (METADATA_NAMES.has(host)) return `${host} is ${DESCRIPTION.metadata}, which is never an upstream`;
    if (host === "localhost" || host.endsWith(".localhost")) {
      const refusal = refusalOf("127.0.0.1", policy);
      return refusal && `${host} is loopback: ${refusal}`;
    }
    for (const address of await resolveBounded(host)) {
      const refusal = refusalOf(address, policy);
      if (refusal) return `${host} resolves to ${refusal}`;
    }
    return undefined;
  };
  return {
    check(url) {
      // Verdicts are kept by the URL's raw authority: a hit costs a slice and a lookup.
      const text = typeof url === "string" ? url : url.href;
      const from = text.indexOf("//") + 2;
      let to = from;
      while (to < text.length && text.charCodeAt(to) !== 0x2f && text.charCodeAt(to) !== 0x3f && text.charCodeAt(to) !== 0x23) to++;
      const authority = text.slice(from, to);
      const hit = verdicts.get(authority);
      if (hit && now() - hit.at < RESOLUTION_CACHE_MS) return Promise.resolve(hit.refusal);
      return judge(hostOf(url)).then((refusal) => {
        if (verdicts.size > 1000) verdicts.clear();
        verdicts.set(authority, { at: now(), refusal });
        return refusal;
      });
    },
  };
}
