import ipaddr from "ipaddr.js";
import { OutboundRefused } from "./errors.ts";
import { isAllowListed, type OutboundPolicy } from "./policy.ts";

/** What an address is, for the policy: see `refusal` for what each kind may reach. */
export type AddressKind = "metadata" | "link-local" | "loopback" | "unspecified" | "private" | "reserved" | "public";

type Ranges = Record<Exclude<AddressKind, "public">, [ipaddr.IPv4 | ipaddr.IPv6, number][]>;

const cidrs = (...list: string[]) => list.map((cidr) => ipaddr.parseCIDR(cidr));

/** Checked in this order: the first kind whose ranges hold the address is its kind. */
const ranges: Ranges = {
  // Cloud instance metadata and host endpoints: they hand out credentials. Most are link-local anyway; these are not
  // all: AWS's IPv6 one is unique-local, Alibaba's is carrier-grade NAT, Azure's WireServer is a public address.
  metadata: cidrs(
    "169.254.169.254/32", // AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle
    "169.254.170.2/32", // AWS ECS task credentials
    "169.254.170.23/32", // AWS EKS pod identity
    "fd00:ec2::254/128", // AWS IMDS over IPv6
    "fd00:ec2::23/128", // AWS EKS pod identity over IPv6
    "100.100.100.200/32", // Alibaba Cloud
    "168.63.129.16/32", // Azure WireServer
    "192.0.0.192/32", // Oracle Cloud (classic)
  ),
  "link-local": cidrs("169.254.0.0/16", "fe80::/10"),
  loopback: cidrs("127.0.0.0/8", "::1/128"),
  // 0.0.0.0/8 and :: reach the local host when connected to on Linux: a loopback in disguise.
  unspecified: cidrs("0.0.0.0/8", "::/128"),
  private: cidrs("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7"),
  // Not unicast on the internet: multicast, 240/4 with the broadcast address, IPv4-compatible IPv6 (deprecated).
  reserved: cidrs("224.0.0.0/4", "240.0.0.0/4", "ff00::/8", "::/96"),
};

/** NAT64 (RFC 6052): on a network with a NAT64 gateway, `64:ff9b::a9fe:a9fe` reaches 169.254.169.254. */
const nat64 = ipaddr.parseCIDR("64:ff9b::/96");

/** An address as the policy compares it: IPv4-mapped and NAT64 IPv6 addresses become the IPv4 address they reach. */
export function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 {
  const address = ipaddr.process(text);
  if (address.kind() === "ipv6" && address.match(nat64)) {
    const [, , , , , , high = 0, low = 0] = (address as ipaddr.IPv6).parts;
    return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  }
  return address;
}

export function classifyAddress(address: ipaddr.IPv4 | ipaddr.IPv6): AddressKind {
  for (const [kind, list] of Object.entries(ranges) as [keyof Ranges, Ranges[keyof Ranges]][]) {
    if (list.some(([range, bits]) => address.kind() === range.kind() && address.match(range, bits))) return kind;
  }
  return "public";
}

const described: Record<Exclude<AddressKind, "public">, string> = {
  metadata: "a cloud metadata address",
  "link-local": "a link-local address",
  loopback: "a loopback address",
  unspecified: "an unspecified address",
  private: "a private address",
  reserved: "a reserved address",
};

/**
 * Why a URL's host can never be reached, whatever the policy says: a literal
 * metadata or link-local address, in any form the URL parser takes
 * (`2852039166`, `[::ffff:a9fe:a9fe]`). A name is judged when it is resolved.
 */
export function neverReachable(hostname: string): OutboundRefused | undefined {
  const host = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname;
  if (!ipaddr.isValid(host)) return undefined;
  const kind = classifyAddress(parseAddress(host));
  if (kind !== "metadata" && kind !== "link-local") return undefined;
  return new OutboundRefused(kind, `${host} is ${described[kind]}, never reachable from tools`);
}

/**
 * Why an address may not be reached through `host` (the URL's host as the user gave it, an address or a name), or
 * undefined when it may. Metadata and link-local addresses are refused even when allow-listed: nothing a tool needs
 * lives there, and a too-wide CIDR (169.254.0.0/16, 0.0.0.0/0) must not open the credentials endpoint.
 */
export function refusal(
  policy: OutboundPolicy,
  host: string,
  address: ipaddr.IPv4 | ipaddr.IPv6,
): OutboundRefused | undefined {
  const kind = classifyAddress(address);
  if (kind === "public") return undefined;
  const literal = ipaddr.isValid(host);
  const subject = literal ? `${host} is` : `${host} resolves to`;
  if (kind === "metadata" || kind === "link-local")
    return new OutboundRefused(kind, `${subject} ${described[kind]}, never reachable from tools`);
  if (isAllowListed(policy.allowedHosts, host, address)) return undefined;
  if (kind === "loopback" && policy.allowLoopback) return undefined;
  return new OutboundRefused(
    kind,
    `${subject} ${described[kind]}, not reachable from tools unless its host is allowed (TOOL_ALLOWED_HOSTS)`,
  );
}
