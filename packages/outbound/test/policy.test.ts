import { describe, expect, it } from "vitest";
import { classifyAddress, neverReachable, parseAddress } from "../src/address.ts";
import { checkUrl, type Resolve } from "../src/check.ts";
import { OutboundRefused } from "../src/errors.ts";
import { outboundPolicy, parseAllowedHosts } from "../src/policy.ts";

const split = outboundPolicy({ allowLoopback: false });
const allInOne = outboundPolicy({ allowLoopback: true });

/** A resolver with a fixed table: names outside it do not resolve, and nothing goes to DNS. */
function resolver(table: Record<string, string[]>): Resolve {
  return async (name) => {
    const addresses = table[name];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
}

async function refusalOf(promise: Promise<unknown>): Promise<OutboundRefused> {
  const error = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(error).toBeInstanceOf(OutboundRefused);
  return error as OutboundRefused;
}

describe("address classification", () => {
  it.each([
    ["169.254.169.254", "metadata"],
    ["::ffff:169.254.169.254", "metadata"],
    ["::ffff:a9fe:a9fe", "metadata"],
    ["64:ff9b::a9fe:a9fe", "metadata"],
    ["fd00:ec2::254", "metadata"],
    ["100.100.100.200", "metadata"],
    ["168.63.129.16", "metadata"],
    ["169.254.1.1", "link-local"],
    ["fe80::1", "link-local"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "private"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:192.168.1.1", "private"],
    ["127.0.0.1", "loopback"],
    ["127.1.2.3", "loopback"],
    ["::1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["224.0.0.1", "reserved"],
    ["255.255.255.255", "reserved"],
    ["93.184.215.14", "public"],
    ["172.32.0.1", "public"],
    ["2606:4700::1111", "public"],
  ])("%s is %s", (address, kind) => {
    expect(classifyAddress(parseAddress(address))).toBe(kind);
  });
});

describe("literal hosts in every form", () => {
  it.each([
    ["http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata address"],
    ["http://2852039166/", "169.254.169.254 is a cloud metadata address"],
    ["http://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254 is a cloud metadata address"],
    ["http://0251.0376.0251.0376/", "169.254.169.254 is a cloud metadata address"],
    ["http://169.254.43518/", "169.254.169.254 is a cloud metadata address"],
    ["http://[::ffff:169.254.169.254]/", "::ffff:a9fe:a9fe is a cloud metadata address"],
    ["http://[fd00:ec2::254]/", "fd00:ec2::254 is a cloud metadata address"],
    ["http://100.100.100.200/", "100.100.100.200 is a cloud metadata address"],
    ["http://[fe80::1]/", "fe80::1 is a link-local address"],
    ["http://10.0.0.1/", "10.0.0.1 is a private address"],
    ["http://172.16.0.1/", "172.16.0.1 is a private address"],
    ["http://192.168.1.1/", "192.168.1.1 is a private address"],
    ["http://100.64.0.1/", "100.64.0.1 is a private address"],
    ["http://[fc00::1]/", "fc00::1 is a private address"],
    ["http://[::ffff:10.0.0.1]/", "::ffff:a00:1 is a private address"],
    ["http://0.0.0.0:8080/", "0.0.0.0 is an unspecified address"],
    ["http://0/", "0.0.0.0 is an unspecified address"],
    ["http://[::]/", ":: is an unspecified address"],
    ["http://127.0.0.1/", "127.0.0.1 is a loopback address"],
    ["http://[::1]/", "::1 is a loopback address"],
  ])("%s is refused: %s", async (url, message) => {
    const refused = await refusalOf(checkUrl(url, split, resolver({})));
    expect(refused.message).toContain(message);
  });

  it("says why in one sentence: never for metadata, unless allowed for private", async () => {
    expect((await refusalOf(checkUrl("http://169.254.169.254/", split, resolver({})))).message).toBe(
      "169.254.169.254 is a cloud metadata address, never reachable from tools",
    );
    expect((await refusalOf(checkUrl("http://10.0.0.1/", split, resolver({})))).message).toBe(
      "10.0.0.1 is a private address, not reachable from tools unless its host is allowed (TOOL_ALLOWED_HOSTS)",
    );
  });

  it("knows a URL's literal metadata or link-local host without any policy; names and other addresses are the policy's", () => {
    const never = (url: string) => neverReachable(new URL(url).hostname)?.message;
    expect(never("http://2852039166/")).toBe("169.254.169.254 is a cloud metadata address, never reachable from tools");
    expect(never("http://[::ffff:169.254.169.254]/")).toBe(
      "::ffff:a9fe:a9fe is a cloud metadata address, never reachable from tools",
    );
    expect(never("http://[fe80::1]/")).toBe("fe80::1 is a link-local address, never reachable from tools");
    for (const url of [
      "http://10.0.0.1/",
      "http://127.0.0.1/",
      "http://[::1]/",
      "http://example.com/",
      "http://93.184.215.14/",
    ])
      expect(never(url)).toBeUndefined();
  });

  it("lets a public address through, with the address to connect to", async () => {
    const checked = await checkUrl("https://93.184.215.14:8443/mcp", split, resolver({}));
    expect(checked).toMatchObject({ host: "93.184.215.14", address: "93.184.215.14", family: 4 });
  });

  it("refuses schemes other than http and https, and URLs that are not URLs", async () => {
    for (const url of ["file:///etc/passwd", "ftp://example.com/", "gopher://example.com/"]) {
      expect((await refusalOf(checkUrl(url, split, resolver({})))).reason).toBe("scheme");
    }
    expect((await refusalOf(checkUrl("not a url", split, resolver({})))).reason).toBe("invalid-url");
  });
});

describe("names", () => {
  const names = resolver({
    "tool.example": ["93.184.215.14"],
    "internal.example": ["10.1.2.3"],
    "mixed.example": ["93.184.215.14", "192.168.0.7"],
    "metadata.example": ["fd00:ec2::254"],
    "mapped.example": ["::ffff:169.254.169.254"],
    "local.example": ["127.0.0.1", "::1"],
  });

  it("connects to the address the name resolved to", async () => {
    const checked = await checkUrl("http://tool.example/mcp", split, names);
    expect(checked).toMatchObject({ host: "tool.example", address: "93.184.215.14", family: 4 });
  });

  it("refuses a name resolving to a private address, without telling the address", async () => {
    const refused = await refusalOf(checkUrl("http://internal.example/", split, names));
    expect(refused.reason).toBe("private");
    expect(refused.message).toBe(
      "internal.example resolves to a private address, not reachable from tools unless its host is allowed (TOOL_ALLOWED_HOSTS)",
    );
    expect(refused.message).not.toContain("10.1.2.3");
  });

  it("refuses a name resolving to a public and a private address", async () => {
    expect((await refusalOf(checkUrl("http://mixed.example/", split, names))).reason).toBe("private");
  });

  it("refuses a name resolving to a metadata address in any form", async () => {
    expect((await refusalOf(checkUrl("http://metadata.example/", split, names))).reason).toBe("metadata");
    expect((await refusalOf(checkUrl("http://mapped.example/", split, names))).reason).toBe("metadata");
  });

  it("refuses a name that does not resolve", async () => {
    const refused = await refusalOf(checkUrl("http://nowhere.invalid/", split, names));
    expect(refused.message).toBe("nowhere.invalid does not resolve to any address");
  });

  it("allows loopback in the all-in-one and refuses it in the split deployment", async () => {
    expect((await checkUrl("http://local.example:3000/", allInOne, names)).address).toBe("127.0.0.1");
    expect((await checkUrl("http://[::1]:3000/", allInOne, names)).address).toBe("::1");
    expect(
      (await checkUrl("http://localhost.:3000/", allInOne, resolver({ "localhost.": ["127.0.0.1"] }))).address,
    ).toBe("127.0.0.1");
    expect((await refusalOf(checkUrl("http://local.example:3000/", split, names))).reason).toBe("loopback");
    expect((await refusalOf(checkUrl("http://127.0.0.1:3000/", split, names))).reason).toBe("loopback");
  });

  it("does not allow private addresses by allowLoopback", async () => {
    expect((await refusalOf(checkUrl("http://internal.example/", allInOne, names))).reason).toBe("private");
  });
});

describe("the allow-list", () => {
  const names = resolver({
    "mcp.corp": ["10.1.2.3"],
    "other.corp": ["10.9.9.9"],
    "metadata.corp": ["169.254.169.254"],
    "local.corp": ["127.0.0.1"],
  });

  it("allows a listed host name's private addresses, and no other name's", async () => {
    const policy = outboundPolicy({ allowedHosts: "MCP.corp.", allowLoopback: false });
    expect((await checkUrl("http://mcp.corp/", policy, names)).address).toBe("10.1.2.3");
    expect((await refusalOf(checkUrl("http://other.corp/", policy, names))).reason).toBe("private");
  });

  it("allows addresses in a listed CIDR or equal to a listed address, by name or literally", async () => {
    const policy = outboundPolicy({ allowedHosts: " 10.1.0.0/16 , 192.168.1.5, fd12::/16", allowLoopback: false });
    expect((await checkUrl("http://mcp.corp/", policy, names)).address).toBe("10.1.2.3");
    expect((await checkUrl("http://10.1.200.1/", policy, names)).address).toBe("10.1.200.1");
    expect((await checkUrl("http://[::ffff:10.1.0.1]/", policy, names)).address).toBe("10.1.0.1");
    expect((await checkUrl("http://192.168.1.5/", policy, names)).address).toBe("192.168.1.5");
    expect((await checkUrl("http://[fd12::1]/", policy, names)).address).toBe("fd12::1");
    expect((await refusalOf(checkUrl("http://other.corp/", policy, names))).reason).toBe("private");
    expect((await refusalOf(checkUrl("http://192.168.1.6/", policy, names))).reason).toBe("private");
  });

  it("allows loopback when listed, even in the split deployment", async () => {
    const policy = outboundPolicy({ allowedHosts: "127.0.0.0/8", allowLoopback: false });
    expect((await checkUrl("http://local.corp/", policy, names)).address).toBe("127.0.0.1");
  });

  it("never allows metadata or link-local addresses, even listed", async () => {
    const policy = outboundPolicy({
      allowedHosts: "169.254.169.254, 169.254.0.0/16, 0.0.0.0/0, ::/0, metadata.corp, fd00:ec2::254",
      allowLoopback: true,
    });
    expect((await refusalOf(checkUrl("http://169.254.169.254/", policy, names))).reason).toBe("metadata");
    expect((await refusalOf(checkUrl("http://2852039166/", policy, names))).reason).toBe("metadata");
    expect((await refusalOf(checkUrl("http://metadata.corp/", policy, names))).reason).toBe("metadata");
    expect((await refusalOf(checkUrl("http://[fd00:ec2::254]/", policy, names))).reason).toBe("metadata");
    expect((await refusalOf(checkUrl("http://169.254.10.10/", policy, names))).reason).toBe("link-local");
  });

  it("reads an empty or unset list as no entries", () => {
    expect(parseAllowedHosts(undefined)).toEqual({ names: new Set(), ranges: [] });
    expect(parseAllowedHosts(" , ")).toEqual({ names: new Set(), ranges: [] });
  });

  it.each([
    "http://mcp.corp",
    "mcp.corp:8080",
    "*.corp",
    "10.0.0.0/33",
    "10.0.0.1/8/2",
    "10",
    "0x0a.0.0.1",
    "10.0.0",
    "fd12::/129",
    "under_score.corp",
  ])("refuses the entry %s, naming it", (entry) => {
    expect(() => parseAllowedHosts(`ok.corp, ${entry}`)).toThrow(
      `TOOL_ALLOWED_HOSTS: "${entry}" is neither a host name, an IP address nor a CIDR`,
    );
  });
});
