import { describe, expect, test } from "bun:test";
import { addressAllowed, normaliseAddress, parseRange, rangeContains, type IpRange } from "../../src/accounts/ip-ranges.ts";

const range = (entry: string): IpRange => {
  const parsed = parseRange(entry);
  if (!parsed) throw new Error(`expected ${entry} to parse`);
  return parsed;
};
const ranges = (...entries: string[]) => entries.map(range);

describe("parseRange", () => {
  test("IPv4 addresses are /32 ranges; CIDR bases are masked", () => {
    expect(range("192.168.1.20")).toEqual({ source: "192.168.1.20", v6: false, base: 0xc0a80114n, prefix: 32 });
    expect(range("10.1.2.3/8")).toMatchObject({ v6: false, base: 0x0a000000n, prefix: 8 });
    expect(range("127.0.0.17/28")).toMatchObject({ base: 0x7f000010n, prefix: 28 });
    expect(range("0.0.0.0/0")).toMatchObject({ base: 0n, prefix: 0 });
    expect(range("255.255.255.255")).toMatchObject({ base: 0xffffffffn, prefix: 32 });
    expect(range(" 10.0.0.1/32 ")).toMatchObject({ source: "10.0.0.1/32", base: 0x0a000001n, prefix: 32 });
  });

  test("IPv6 addresses and ranges, compressed or full", () => {
    expect(range("::1")).toMatchObject({ v6: true, base: 1n, prefix: 128 });
    expect(range("::")).toMatchObject({ v6: true, base: 0n, prefix: 128 });
    expect(range("2001:db8::/32")).toMatchObject({ v6: true, base: 0x20010db8n << 96n, prefix: 32 });
    expect(range("2001:0db8:0000:0000:0000:0000:0000:0001").base).toBe(range("2001:db8::1").base);
    expect(range("2001:db8:abcd:12::ff/64")).toMatchObject({ base: 0x20010db8abcd0012n << 64n, prefix: 64 });
    expect(range("fe80::/10")).toMatchObject({ base: 0xfe80n << 112n, prefix: 10 });
    expect(range("2001:DB8::1").base).toBe(range("2001:db8::1").base);
    expect(range("1::").base).toBe(1n << 112n);
  });

  test("::ffff:-mapped IPv4 addresses and ranges are IPv4", () => {
    expect(range("::ffff:10.1.2.3")).toMatchObject({ v6: false, base: 0x0a010203n, prefix: 32 });
    expect(range("::FFFF:127.0.0.1")).toMatchObject({ v6: false, base: 0x7f000001n, prefix: 32 });
    expect(range("::ffff:7f00:1")).toMatchObject({ v6: false, base: 0x7f000001n, prefix: 32 });
    expect(range("::ffff:10.0.0.0/104")).toMatchObject({ v6: false, base: 0x0a000000n, prefix: 8 });
    expect(range("::ffff:0:0/96")).toMatchObject({ v6: false, base: 0n, prefix: 0 });
    // An embedded IPv4 tail that is not ::ffff: stays IPv6.
    expect(range("2001:db8::1.2.3.4")).toMatchObject({ v6: true, base: (0x20010db8n << 96n) | 0x01020304n });
    expect(normaliseAddress("::ffff:1.2.3.4")).toBe("1.2.3.4");
    expect(normaliseAddress("::1")).toBe("::1");
  });

  test("malformed entries are undefined", () => {
    for (const bad of [
      "",
      " ",
      "localhost",
      "1.2.3",
      "1.2.3.4.5",
      "256.1.1.1",
      "01.2.3.4",
      "1.2.3.-4",
      "1.2.3.4/",
      "1.2.3.4/33",
      "1.2.3.4/-1",
      "1.2.3.4/x",
      "1.2.3.4/8/8",
      "1.2.3.4/1000",
      "/8",
      "::1/129",
      "1::2::3",
      "2001:db8::g",
      "12345::",
      "::ffff:10.0.0.0/129",
      "10.0.0.0 /8",
      "10.0.0.0/ 8",
      "1.2.3.4,5.6.7.8",
    ]) {
      expect({ bad, parsed: parseRange(bad) }).toEqual({ bad, parsed: undefined });
    }
  });
});

describe("rangeContains", () => {
  test("a /28 lies inside its /24; a wider or neighbouring range does not", () => {
    expect(rangeContains(range("127.0.0.0/24"), range("127.0.0.16/28"))).toBe(true);
    expect(rangeContains(range("127.0.0.0/24"), range("127.0.0.0/24"))).toBe(true);
    expect(rangeContains(range("127.0.0.0/24"), range("127.0.0.255"))).toBe(true);
    expect(rangeContains(range("127.0.0.0/24"), range("127.0.0.0/16"))).toBe(false);
    expect(rangeContains(range("127.0.0.0/24"), range("127.0.1.0/28"))).toBe(false);
    expect(rangeContains(range("127.0.0.0/24"), range("127.0.1.0"))).toBe(false);
    expect(rangeContains(range("10.0.0.0/8"), range("11.0.0.0/8"))).toBe(false);
    expect(rangeContains(range("0.0.0.0/0"), range("203.0.113.9"))).toBe(true);
    expect(rangeContains(range("203.0.113.9"), range("203.0.113.9"))).toBe(true);
    expect(rangeContains(range("203.0.113.9"), range("203.0.113.8/31"))).toBe(false);
  });

  test("IPv6 containment, and the families never contain each other", () => {
    expect(rangeContains(range("2001:db8::/32"), range("2001:db8:1::/48"))).toBe(true);
    expect(rangeContains(range("2001:db8::/32"), range("2001:db8:ffff::1"))).toBe(true);
    expect(rangeContains(range("2001:db8::/32"), range("2001:db9::/48"))).toBe(false);
    expect(rangeContains(range("2001:db8::/48"), range("2001:db8::/32"))).toBe(false);
    expect(rangeContains(range("::/0"), range("127.0.0.1"))).toBe(false);
    expect(rangeContains(range("0.0.0.0/0"), range("::1"))).toBe(false);
    expect(rangeContains(range("127.0.0.0/8"), range("::ffff:127.0.0.1"))).toBe(true);
  });
});

describe("addressAllowed", () => {
  test("matches client addresses against a list, IPv4-mapped sockets included", () => {
    const list = ranges("10.0.0.0/8", "192.168.1.7", "2001:db8::/32");
    expect(addressAllowed(list, "10.200.3.4")).toBe(true);
    expect(addressAllowed(list, "::ffff:10.200.3.4")).toBe(true);
    expect(addressAllowed(list, "192.168.1.7")).toBe(true);
    expect(addressAllowed(list, "192.168.1.8")).toBe(false);
    expect(addressAllowed(list, "2001:db8:5::9")).toBe(true);
    expect(addressAllowed(list, "2001:db9::1")).toBe(false);
    expect(addressAllowed(list, "127.0.0.1")).toBe(false);
    expect(addressAllowed(ranges("::ffff:127.0.0.0/104"), "127.1.2.3")).toBe(true);
  });

  test("malformed or empty client addresses and empty lists are never allowed", () => {
    const list = ranges("0.0.0.0/0", "::/0");
    for (const bad of ["", "unknown", "10.0.0.1/8", "1.2.3.4, 5.6.7.8", "999.0.0.1"]) {
      expect({ bad, allowed: addressAllowed(list, bad) }).toEqual({ bad, allowed: false });
    }
    expect(addressAllowed([], "127.0.0.1")).toBe(false);
  });
});
