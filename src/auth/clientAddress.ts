import { BlockList, isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';

/** A hop with a port or brackets as the bare address; otherwise every client behind such a proxy shares one bucket. */
function withoutPort(hop: string): string {
  if (hop.startsWith('[')) {
    const close = hop.indexOf(']');
    return close === -1 ? hop : hop.slice(1, close);
  }
  const colon = hop.indexOf(':');
  // one colon: IPv4 with a port; IPv6 takes no port without brackets
  return colon !== -1 && hop.indexOf(':', colon + 1) === -1 ? hop.slice(0, colon) : hop;
}

const unmapped = (address: string): string =>
  (address.startsWith('::ffff:') || address.startsWith('::FFFF:')) && isIP(address.slice(7)) === 4 ? address.slice(7) : address;

/** Who a request counts against: the peer, or behind a TRUST_PROXY proxy its X-Forwarded-For read
 * from the right past every trusted proxy, so a client cannot choose its address by a header. */
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
      if (slash === -1) this.trusted.addAddress(address, type);
      else this.trusted.addSubnet(address, Number(pattern.slice(slash + 1)) - (address === written ? 0 : 96), type);
    }
  }

  /** The address, IPv4-mapped ones as IPv4, so a client counts as one address directly or through a proxy. */
  of(req: IncomingMessage): string {
    const peer = unmapped(req.socket.remoteAddress ?? 'unknown');
    if (!this.isTrusted(peer)) return peer;
    const header = req.headers['x-forwarded-for'];
    if (header === undefined) return peer;
    const hops = (Array.isArray(header) ? header.join(',') : header).split(',');
    // only the last few hops are read: a long header costs nothing more
    for (let i = hops.length - 1, seen = 0; i >= 0 && seen < 16; i -= 1, seen += 1) {
      const hop = unmapped(withoutPort(hops[i]!.trim()));
      if (isIP(hop) === 0) return peer;
      if (!this.isTrusted(hop)) return hop;
    }
    return peer;
  }

  isTrusted(address: string): boolean {
    if (this.trusted === null) return false;
    const plain = unmapped(address);
    const family = isIP(plain);
    return family !== 0 && this.trusted.check(plain, family === 6 ? 'ipv6' : 'ipv4');
  }
}

/** What a client's limits are kept under: IPv4 as is, IPv6 by its canonical /64, since a subscriber
 * holds a whole /64 and privacy addresses rotate within it. */
export function clientNetwork(address: string): string {
  if (!address.includes(':') || isIP(address) !== 6) return address;
  const groups = ipv6Groups(address);
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return `${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.${groups[7]! & 0xff}`;
  }
  return `${groups.slice(0, 4).map((group) => group.toString(16)).join(':')}::/64`;
}

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
