import ipaddr from "ipaddr.js";

/** Addresses that private, loopback and other non-public addresses are allowed for; see `isAllowListed`. */
export interface AllowedHosts {
  /** Host names, lower case, without a trailing dot: matched against the URL's host exactly. */
  readonly names: ReadonlySet<string>;
  /** Address ranges (a single address is a /32 or /128): matched against every address the host resolves to. */
  readonly ranges: readonly (readonly [ipaddr.IPv4 | ipaddr.IPv6, number])[];
}

export interface OutboundPolicy {
  readonly allowedHosts: AllowedHosts;
  /** True in the all-in-one (tool servers on the same machine are its common case), false in the split deployment. */
  readonly allowLoopback: boolean;
}

/** A DNS name: labels of letters, digits and inner hyphens (RFC 1123), an optional trailing dot. */
const hostName =
  /^(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i;

/**
 * Parses an allow-list such as `TOOL_ALLOWED_HOSTS`: comma-separated host names, addresses and CIDRs
 * (`mcp.internal, 10.1.0.0/16, 192.168.1.5, fd12::/64`). A bad entry throws, naming it and the variable, so a
 * misspelt list stops the start instead of silently allowing nothing.
 */
export function parseAllowedHosts(text: string | undefined, variable = "TOOL_ALLOWED_HOSTS"): AllowedHosts {
  const names = new Set<string>();
  const ranges: [ipaddr.IPv4 | ipaddr.IPv6, number][] = [];
  for (const raw of (text ?? "").split(",")) {
    const entry = raw.trim();
    if (entry === "") continue;
    const range = parseRange(entry);
    if (range) ranges.push(range);
    else if (!looksNumeric(entry) && hostName.test(entry)) names.add(entry.toLowerCase().replace(/\.$/, ""));
    else
      throw new Error(
        `${variable}: "${entry}" is neither a host name, an IP address nor a CIDR (e.g. tools.internal, 10.0.0.0/8, fd00::/8)`,
      );
  }
  return { names, ranges };
}

export function outboundPolicy(options: { allowedHosts?: string | undefined; allowLoopback: boolean }): OutboundPolicy {
  return { allowedHosts: parseAllowedHosts(options.allowedHosts), allowLoopback: options.allowLoopback };
}

/** Whether an address reached through `host` (the URL's host name) is on the allow-list, by name or by range. */
export function isAllowListed(allowed: AllowedHosts, host: string, address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  if (allowed.names.has(host.toLowerCase().replace(/\.$/, ""))) return true;
  return allowed.ranges.some(([range, bits]) => address.kind() === range.kind() && address.match(range, bits));
}

/**
 * An address or CIDR in its plain form only: ipaddr.js also reads `10`, `0x0a.1` or `012.0.0.1` as IPv4, which in a
 * configuration is more likely a typo than a wish. Mapped IPv6 ranges are stored as IPv4, as addresses are compared.
 */
function parseRange(entry: string): [ipaddr.IPv4 | ipaddr.IPv6, number] | undefined {
  const [address = "", bits, ...rest] = entry.split("/");
  if (rest.length > 0) return undefined;
  if (!ipaddr.IPv4.isValidFourPartDecimal(address) && !ipaddr.IPv6.isValid(address)) return undefined;
  if (bits === undefined) {
    const parsed = ipaddr.process(address);
    return [parsed, parsed.kind() === "ipv4" ? 32 : 128];
  }
  if (!ipaddr.isValidCIDR(entry)) return undefined;
  const [range, prefix] = ipaddr.parseCIDR(entry);
  if (range.kind() === "ipv6" && (range as ipaddr.IPv6).isIPv4MappedAddress() && prefix >= 96)
    return [(range as ipaddr.IPv6).toIPv4Address(), prefix - 96];
  return [range, prefix];
}

function looksNumeric(entry: string): boolean {
  return /^[0-9.]+$/.test(entry) || /^0x/i.test(entry) || entry.includes(":") || entry.includes("/");
}
