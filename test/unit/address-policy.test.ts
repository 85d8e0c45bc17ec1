import { describe, expect, test } from "bun:test";
import { classifyAddress, createAddressGuard, RESOLUTION_CACHE_MS, refusalOf } from "../../src/upstreams/address-policy.ts";

describe("classifying an address", () => {
  test.each([
    ["169.254.169.254", "metadata"],
    ["169.254.1.1", "link-local"],
    ["100.100.100.200", "metadata"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["172.32.0.1", "public"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "private"],
    ["100.128.0.1", "public"],
    ["8.8.8.8", "public"],
    ["224.0.0.1", "reserved"],
    ["255.255.255.255", "reserved"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["[::1]", "loopback"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["fd00:ec2::254", "metadata"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["ff02::1", "reserved"],
    ["2001:4860:4860::8888", "public"],
  ])("%s is %s", (address, kind) => {
    expect(classifyAddress(address)).toBe(kind as never);
  });

  test.each([
    ["::ffff:169.254.169.254", "metadata"],
    ["::ffff:a9fe:a9fe", "metadata"],
    ["::ffff:a9fe:101", "link-local"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::169.254.169.254", "metadata"],
    ["64:ff9b::169.254.169.254", "metadata"],
    ["64:ff9b::a9fe:a9fe", "metadata"],
    ["64:ff9b::a00:1", "private"],
    ["64:ff9b:1::a9fe:a9fe", "metadata"],
    ["2002:a9fe:a9fe::1", "metadata"],
    ["2002:0a00:0001::", "private"],
    ["::ffff:8.8.8.8", "public"],
  ])("an IPv4 address inside IPv6 is classified as itself: %s is %s", (address, kind) => {
    expect(classifyAddress(address)).toBe(kind as never);
  });

  test("what does not parse is never an upstream", () => {
    expect(classifyAddress("not-an-ip")).toBe("reserved");
    expect(classifyAddress("1::2::3")).toBe("reserved");
  });
});

describe("the policy", () => {
  test("metadata, link-local, unspecified and reserved addresses are refused always; private and loopback only when not allowed", () => {
    for (const allowPrivate of [true, false]) {
      expect(refusalOf("169.254.169.254", { allowPrivate })).toContain("metadata");
      expect(refusalOf("169.254.7.7", { allowPrivate })).toContain("link-local");
      expect(refusalOf("0.0.0.0", { allowPrivate })).toContain("unspecified");
      expect(refusalOf("8.8.8.8", { allowPrivate })).toBeUndefined();
    }
    expect(refusalOf("10.1.2.3", { allowPrivate: true })).toBeUndefined();
    expect(refusalOf("::1", { allowPrivate: true })).toBeUndefined();
    expect(refusalOf("10.1.2.3", { allowPrivate: false })).toContain("--allow-private-upstreams");
    expect(refusalOf("::1", { allowPrivate: false })).toContain("loopback");
  });
});

describe("the guard", () => {
  const resolver = (table: Record<string, string[]>) => {
    const asked: string[] = [];
    const resolve = async (host: string) => {
      asked.push(host);
      return table[host] ?? [];
    };
    return { resolve, asked };
  };

  test("URL spellings that parse to a refused address are refused", async () => {
    const guard = createAddressGuard({ allowPrivate: false }, async () => []);
    for (const url of ["https://169.254.169.254/v1", "https://[::ffff:169.254.169.254]/v1", "https://0xa9.0xfe.0xa9.0xfe/", "https://2852039166/", "https://127.1:8443/", "https://[::1]:443/", "https://0/"]) {
      expect(await guard.check(url)).toBeDefined();
    }
    expect(await guard.check("https://8.8.8.8/v1")).toBeUndefined();
  });

  test("names: metadata names are refused unresolved; others by every address they resolve to", async () => {
    const { resolve, asked } = resolver({ "api.example.com": ["8.8.8.8"], "sneaky.example.com": ["8.8.8.8", "169.254.169.254"], "internal.example.com": ["10.0.0.5"] });
    const guard = createAddressGuard({ allowPrivate: false }, resolve);
    expect(await guard.check("https://metadata.google.internal/computeMetadata/v1")).toContain("metadata");
    expect(asked).not.toContain("metadata.google.internal");
    expect(await guard.check("https://api.example.com/v1")).toBeUndefined();
    expect(await guard.check("https://sneaky.example.com/v1")).toContain("sneaky.example.com resolves to 169.254.169.254");
    expect(await guard.check("https://internal.example.com/v1")).toContain("--allow-private-upstreams");
    expect(await guard.check("https://localhost:8443/v1")).toContain("loopback");
    // A name that does not resolve passes: nothing can be reached through it.
    expect(await guard.check("https://nowhere.example.com/v1")).toBeUndefined();
  });

  test("a resolution is trusted for at most 30 seconds: a name that starts resolving elsewhere is refused then", async () => {
    const table: Record<string, string[]> = { "up.example.com": ["8.8.4.4"] };
    const { resolve, asked } = resolver(table);
    let now = 1_000_000;
    const guard = createAddressGuard({ allowPrivate: true }, resolve, () => now);
    expect(await guard.check("https://up.example.com/v1/chat/completions")).toBeUndefined();
    table["up.example.com"] = ["169.254.169.254"];
    now += RESOLUTION_CACHE_MS - 1;
    expect(await guard.check("https://up.example.com/v1/responses")).toBeUndefined();
    expect(asked).toHaveLength(1);
    now += 1;
    expect(await guard.check("https://up.example.com/v1/responses")).toContain("169.254.169.254");
    expect(asked).toHaveLength(2);
  });
});
