import { BlockList, isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';

/**
 * A hop as some proxies write it, with a port (`1.2.3.4:5678`, `[2001:db8::5]:443`) or brackets
 * (`[2001:db8::5]`), as the address alone: read as they stand, such hops were no address, and
 * every client behind that proxy counted as the proxy, one bucket for all.
 */
function withoutPort(hop: string): string {
  if (hop.startsWith('[')) {
    const close = hop.indexOf(']');
    return close === -1 ? hop : hop.slice(1, close);
  }
  const colon = hop.indexOf(':');
  // one colon: IPv4 and a port; more is IPv6, which takes no port without brackets
  return colon !== -1 && hop.indexOf(':', colon + 1) === -1 ? hop.slice(0, colon) : hop;
}

/** An IPv4-mapped IPv6 address (::ffff:127.0.0.1, ::FFFF:127.0.0.1) as the IPv4 address it is. */
const unmapped = (address: string): string =>
  (address.startsWith('::ffff:') || address.startsWith('::FFFF:')) && isIP(address.slice(7)) === 4 ? address.slice(7) : address;

/**
 * Who a request counts against for rate limits and failed sign-ins: the peer's address, or,
 * when the peer is a proxy named in TRUST_PROXY, the address its X-Forwarded-For names. The
 * header is read from the right, past every trusted proxy, so a client cannot choose its address
 * by sending a header of its own: whatever it wrote stands to the left of what its proxy added.
 */
export class ClientAddresses {
  private readonly trusted: BlockList | null;

  constructor(trustProxy: readonly string[] = []) {
    if (trustProxy.length === 0) {
      this.trusted = null;
      return;
    }
    this.trusted = new BlockList();
    for (const pattern of trustProxy) {
      const slash = pattern.indexOf('/');
      const written = slash === -1 ? pattern : pattern.slice(0, slash);
      const address = unmapped(written);
      const type = isIP(address) === 6 ? 'ipv6' : 'ipv4';
      // a mapped block's prefix counts the 96 bits before the IPv4 address (loadConfig checks it)
      if (slash === -1) this.trusted.addAddress(address, type);
      else this.trusted.addSubnet(address, Number(pattern.slice(slash + 1)) - (address === written ? 0 : 96), type);
    }
  }

  /**
   * The address, IPv4 as such whichever way it came (a dual-stack listener sees ::ffff:1.2.3.4): a
   * client's failed sign-ins count under one address whether it came directly or through a proxy.
   */
  of(req: IncomingMessage): string {
    const peer = unmapped(req.socket.remoteAddress ?? 'unknown');
    if (!this.isTrusted(peer)) return peer;
    const header = req.headers['x-forwarded-for'];
    if (header === undefined) return peer;
    const hops = (Array.isArray(header) ? header.join(',') : header).split(',');
    // only the last few hops are looked at: a long header costs nothing more
    for (let i = hops.length - 1, seen = 0; i >= 0 && seen < 16; i -= 1, seen += 1) {
      const hop = unmapped(withoutPort(hops[i]!.trim()));
      if (isIP(hop) === 0) return peer;
      if (!this.isTrusted(hop)) return hop;
    }
    return peer;
  }

  /** Whether `address` is a proxy named in TRUST_PROXY (IPv4-mapped or not). */
  isTrusted(address: string): boolean {
    if (this.trusted === null) return false;
    const plain = unmapped(address);
    const family = isIP(plain);
    return family !== 0 && this.trusted.check(plain, family === 6 ? 'ipv6' : 'ipv4');
  }
}

/**
 * What a client's limits and marks are kept under: an IPv4 address as it is, an IPv6 address by
 * its /64, written one way (an ISP gives a subscriber a /64 or more, and privacy addresses rotate
 * within it: one bucket per /128 gave an attacker a fresh one an address, and a user a new
 * address every day; `2001:DB8::1` and `2001:db8:0:0::1` were two buckets). An IPv4-mapped
 * address however written (`::ffff:a01:101`) is its IPv4 address. Anything else as it is.
 */
export function clientNetwork(address: string): string {
  if (!address.includes(':') || isIP(address) !== 6) return address;
  const groups = ipv6Groups(address);
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return `${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.${groups[7]! & 0xff}`;
  }
  return `${groups.slice(0, 4).map((group) => group.toString(16)).join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (isIP 6): `::` filled, an IPv4 tail as two groups, a zone dropped. */
function ipv6Groups(address: string): number[] {
  const zone = address.indexOf('%');
  const plain = zone === -1 ? address : address.slice(0, zone);
  const parse = (part: string): number[] =>
    part === '' ? [] : part.split(':').flatMap((group) => (group.includes('.') ? dotted(group) : [Number.parseInt(group, 16)]));
  const gap = plain.indexOf('::');
  if (gap === -1) return parse(plain);
  const head = parse(plain.slice(0, gap));
  const tail = parse(plain.slice(gap + 2));
  return [...head, ...Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

function dotted(ipv4: string): number[] {
  const [a, b, c, d] = ipv4.split('.').map(Number) as [number, number, number, number];
  return [(a << 8) | b, (c << 8) | d];
}
