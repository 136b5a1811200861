import { lookup } from "node:dns/promises";
import ipaddr from "ipaddr.js";
import { parseAddress, refusal } from "./address.ts";
import { OutboundRefused } from "./errors.ts";
import type { OutboundPolicy } from "./policy.ts";

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Every address a host name resolves to; injectable so tests can map names without a DNS server. */
export type Resolve = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system's resolver, as a connection would use it (`/etc/hosts`, then DNS). */
export const systemResolve: Resolve = (hostname) => lookup(hostname, { all: true });

export interface CheckedUrl {
  url: URL;
  /** The URL's host as a name or an address, without IPv6 brackets: what TLS and `Host` keep using. */
  host: string;
  /** The address the policy allowed, to connect to and nothing else. */
  address: string;
  family: 4 | 6;
}

/**
 * Checks a URL against the policy and gives the address to connect to. The host is read through WHATWG URL parsing,
 * as the fetch will read it, so `http://2852039166/`, `http://0xa9.0xfe.0xa9.0xfe/` and
 * `http://[::ffff:169.254.169.254]/` are the address they spell before anything is decided.
 */
export async function checkUrl(
  input: string | URL,
  policy: OutboundPolicy,
  resolve: Resolve = systemResolve,
): Promise<CheckedUrl> {
  const url = parseUrl(input);
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new OutboundRefused("scheme", `${url.protocol}// URLs are not reachable from tools, only http and https`);
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  if (ipaddr.isValid(host)) {
    const address = parseAddress(host);
    const refused = refusal(policy, host, address);
    if (refused) throw refused;
    return { url, host, address: address.toString(), family: address.kind() === "ipv4" ? 4 : 6 };
  }
  const resolved = await resolveAll(resolve, host);
  // Every address is checked, not only the first: a connection may use any of them (another family, a retry, the
  // next lookup's order), and an answer that mixes a public address with a private one is how a name is aimed
  // at the internal network while looking harmless.
  for (const { address } of resolved) {
    const refused = refusal(policy, host, parseAddress(address));
    if (refused) throw refused;
  }
  const [first] = resolved as [ResolvedAddress, ...ResolvedAddress[]];
  return { url, host, address: first.address, family: first.family === 6 ? 6 : 4 };
}

function parseUrl(input: string | URL): URL {
  try {
    return new URL(input);
  } catch {
    throw new OutboundRefused("invalid-url", "the tool's URL is not a valid absolute URL");
  }
}

async function resolveAll(resolve: Resolve, host: string): Promise<ResolvedAddress[]> {
  let resolved: ResolvedAddress[];
  try {
    resolved = await resolve(host);
  } catch {
    resolved = [];
  }
  if (resolved.length === 0) throw new OutboundRefused("unresolved", `${host} does not resolve to any address`);
  return resolved;
}
