import { isIPv4, isIPv6 } from "node:net";

/** An address range: family, first address as a number, and prefix length. */
export interface IpRange {
  readonly source: string;
  readonly v6: boolean;
  readonly base: bigint;
  readonly prefix: number;
}

function v4ToBig(address: string): bigint {
  return address.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function v6ToBig(address: string): bigint {
  let text = address;
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two hextets.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const n = v4ToBig(v4[1]!);
    text = text.slice(0, -v4[1]!.length) + `${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const headParts = head ? head.split(":") : [];
  const tailParts = tail ? tail.split(":") : [];
  const missing = 8 - headParts.length - tailParts.length;
  const parts = tail === undefined ? headParts : [...headParts, ...Array<string>(missing).fill("0"), ...tailParts];
  return parts.reduce((acc, part) => (acc << 16n) | BigInt(parseInt(part || "0", 16)), 0n);
}

/** Maps IPv4-mapped IPv6 (::ffff:a.b.c.d) to plain IPv4, as sockets often report them. */
export function normaliseAddress(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1]! : address;
}

/** Parses `1.2.3.4`, `10.0.0.0/8`, `::1`, `2001:db8::/32`; undefined when malformed. */
export function parseRange(entry: string): IpRange | undefined {
  const [address, bits, extra] = entry.trim().split("/");
  if (!address || extra !== undefined) return undefined;
  const v6 = isIPv6(address);
  if (!v6 && !isIPv4(address)) return undefined;
  const width = v6 ? 128 : 32;
  if (bits !== undefined && !/^\d{1,3}$/.test(bits)) return undefined;
  const prefix = bits === undefined ? width : Number(bits);
  if (prefix > width) return undefined;
  const value = v6 ? v6ToBig(address) : v4ToBig(address);
  // IPv4-mapped IPv6 (::ffff:a.b.c.d, also as a range of /96 or narrower) is IPv4,
  // which is how client addresses are compared.
  if (v6 && prefix >= 96 && value >> 32n === 0xffffn) return masked(entry, false, value & 0xffffffffn, prefix - 96);
  return masked(entry, v6, value, prefix);
}

function masked(entry: string, v6: boolean, value: bigint, prefix: number): IpRange {
  const range = { source: entry.trim(), v6, base: value, prefix };
  return { ...range, base: value & maskOf(range) };
}

function maskOf(range: IpRange): bigint {
  const width = range.v6 ? 128 : 32;
  return range.prefix === 0 ? 0n : ((1n << BigInt(range.prefix)) - 1n) << BigInt(width - range.prefix);
}

/** True when `inner` lies entirely inside `outer`. */
export function rangeContains(outer: IpRange, inner: IpRange): boolean {
  return outer.v6 === inner.v6 && outer.prefix <= inner.prefix && (inner.base & maskOf(outer)) === outer.base;
}

/** True when the address (a single address, not a range) belongs to one of the ranges. */
export function addressAllowed(ranges: readonly IpRange[], address: string): boolean {
  if (address.includes("/")) return false;
  const single = parseRange(address);
  return single !== undefined && ranges.some((range) => rangeContains(range, single));
}
