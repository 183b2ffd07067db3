import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { isSealed } from '../shared/secret-box.js';

/**
 * SSRF guard for every outbound call of an action (docs/workflows.md "Outbound guard").
 * A URL passes when its scheme is http/https and every address its host resolves to is a global
 * unicast address, or the host/address is named by OUTBOUND_ALLOW (hostnames, IPs, CIDRs).
 * The caller connects to the returned, checked address (never resolves again), so a DNS answer
 * that changes between check and connect (rebinding) cannot redirect the call.
 */

type Ip = ipaddr.IPv4 | ipaddr.IPv6;

export interface AllowList {
  hosts: ReadonlySet<string>;
  ranges: readonly [Ip, number][];
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Resolver = (host: string) => Promise<{ address: string; family: number }[]>;

export class OutboundRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutboundRefusedError';
  }
}

export const systemResolver: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true });

/** OUTBOUND_ALLOW entries: `example.internal`, `10.0.0.5`, `10.0.0.0/8`, `::1`, `fd00::/8`. */
export function parseAllowList(entries: readonly string[]): AllowList {
  const hosts = new Set<string>();
  const ranges: [Ip, number][] = [];
  for (const raw of entries) {
    const entry = raw
      .trim()
      .toLowerCase()
      .replace(/^\[(.*)\]$/, '$1');
    if (!entry) continue;
    if (entry.includes('/') && ipaddr.isValidCIDR(entry)) {
      const [ip, bits] = ipaddr.parseCIDR(entry);
      ranges.push([unmap(ip), ip.kind() === 'ipv6' && unmap(ip).kind() === 'ipv4' ? bits - 96 : bits]);
    } else if (ipaddr.isValid(entry)) {
      const ip = unmap(ipaddr.parse(entry));
      ranges.push([ip, ip.kind() === 'ipv4' ? 32 : 128]);
    } else {
      hosts.add(entry);
    }
  }
  return { hosts, ranges };
}

/** `ipv4Mapped` IPv6 (::ffff:10.0.0.1) is checked as the IPv4 address it carries. */
function unmap(ip: Ip): Ip {
  return ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()
    ? (ip as ipaddr.IPv6).toIPv4Address()
    : ip;
}

function allowedByList(ip: Ip, allow: AllowList): boolean {
  return allow.ranges.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits));
}

/**
 * The ipaddr.js range name of an address, or undefined when it may be called: only `unicast`
 * (global unicast) passes; loopback, private, link-local, unique-local, CGNAT, multicast,
 * unspecified, broadcast, reserved and the IPv6 transition ranges (6to4, Teredo, NAT64, IPv4-compatible
 * ::/96 — they can embed a private IPv4) are refused.
 */
export function blockedRange(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return 'invalid';
  const ip = unmap(ipaddr.parse(address));
  const range = ip.range();
  // IPv4-compatible IPv6 (::a.b.c.d, deprecated by RFC 4291): ipaddr.js calls most of it unicast,
  // but a host may route it to the IPv4 address it carries (::7f00:1 = 127.0.0.1).
  if (ip.kind() === 'ipv6' && range !== 'unspecified' && range !== 'loopback' && ip.match(IPV4_COMPATIBLE))
    return 'ipv4Compatible';
  return range === 'unicast' ? undefined : range;
}

const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

export class OutboundGuard {
  private readonly allow: AllowList;

  constructor(
    allowEntries: readonly string[],
    private readonly resolve: Resolver = systemResolver,
  ) {
    this.allow = parseAllowList(allowEntries);
  }

  /** Parses and checks a URL; resolves to the address to connect to. Throws OutboundRefusedError. */
  async check(rawUrl: string): Promise<{ url: URL; target: ResolvedAddress }> {
    if (isSealed(rawUrl)) {
      // A secret sealed with another key stays sealed when the runner opens the actions.
      throw new OutboundRefusedError(
        'the URL is sealed with a different SECRETS_KEY than this process has: every process of a deployment needs the same one (docs/security.md "Secrets at rest")',
      );
    }
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      throw new OutboundRefusedError(`invalid URL: ${JSON.stringify(rawUrl.slice(0, 200))}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new OutboundRefusedError(`only http and https URLs are allowed, not ${url.protocol}`);
    }
    if (url.username || url.password) {
      // Credentials in the URL would be sent as Basic auth; ask for an explicit header instead.
      throw new OutboundRefusedError('credentials in the URL are not allowed; use a header');
    }
    const host = url.hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
    const hostAllowed = this.allow.hosts.has(host);
    let answers: { address: string; family: number }[];
    const literal = ipaddr.isValid(host);
    if (literal) {
      answers = [{ address: host, family: ipaddr.parse(host).kind() === 'ipv4' ? 4 : 6 }];
    } else {
      try {
        answers = await this.resolve(host);
      } catch (err) {
        const code = (err as { code?: string }).code ?? (err as Error).message;
        throw new DnsError(`cannot resolve ${host}: ${code}`);
      }
      if (answers.length === 0) throw new DnsError(`cannot resolve ${host}: no address`);
    }
    // NOTE: every answer must pass, not just the first: an attacker's DNS can mix a public and a
    // private address and let the connecting side pick the private one.
    for (const a of answers) {
      const range = blockedRange(a.address);
      if (range && !hostAllowed && !allowedByList(unmap(ipaddr.parse(a.address)), this.allow)) {
        // A literal address is what the caller wrote: naming its range tells nothing new. For a
        // name, the message never says what it resolves to: that would map internal host names
        // (`vm` -> 127.0.0.1) for whoever can send a test.
        throw new OutboundRefusedError(
          literal
            ? `refused to call ${host}: address ${a.address} is ${range} (not in OUTBOUND_ALLOW)`
            : `refused to call ${host}: the target is not allowed (internal and reserved addresses are refused unless OUTBOUND_ALLOW lists the host)`,
        );
      }
    }
    const first = answers[0]!;
    return { url, target: { address: first.address, family: first.family === 6 ? 6 : 4 } };
  }
}

/**
 * DNS failure. Every kind is retried like other network errors (ACTION_MAX_ATTEMPTS bounds it):
 * a name that does not resolve now (ENOTFOUND, no address) often does a minute later, e.g. a record
 * still propagating or a resolver answering NXDOMAIN while it is overloaded.
 */
export class DnsError extends Error {
  readonly retryable = true;
  constructor(message: string) {
    super(message);
    this.name = 'DnsError';
  }
}
