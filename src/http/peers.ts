import type http from 'node:http';
import type { Socket } from 'node:net';
import { LRUCache } from 'lru-cache';
import { type ClientAddresses, clientNetwork } from '../auth/clientAddress.js';
import type { ServerLimits } from '../config/limits.js';

// Only node's own modules and lru-cache at run time: listener.ts (loaded before the gateway) uses this.

/** Networks whose lingered bytes are remembered at most: the least recently seen go first. */
const MAX_LINGERING_NETWORKS = 10_000;

export interface PeerSettings extends Pick<ServerLimits, 'maxConnectionsPerAddress' | 'lingerBytesPerSecond'> {
  /** Bytes of refused bodies a network that lingered for none lately may have read at once: its bucket's size. */
  lingerBurstBytes: number;
}

/** The connections followed for their network's lingering budget, with their PeerLimits. */
const peers = new WeakMap<Socket, { limits: PeerLimits; network: string }>();

/**
 * What one client network (clientNetwork: an IPv4 address, an IPv6 /64) may hold of the
 * server, by each connection's peer: its open connections, taken or refused before a byte is read
 * (so no header, X-Forwarded-For, can count), and the bytes of refused bodies read and dropped
 * for it (linger.ts). A proxy in TRUST_PROXY carries every client's connections and bodies: it is
 * held only by MAX_CONNECTIONS and each linger's own budgets.
 */
export class PeerLimits {
  /** Open connections by network; a network with none has no entry. */
  private readonly open = new Map<string, number>();
  /**
   * Lingered bytes each network may still have read (a token bucket), least recently spent first
   * out; a bucket goes once it would have refilled, as a network seen for the first time starts full.
   */
  private readonly lingering = new LRUCache<string, { bytes: number; at: number }>({ max: MAX_LINGERING_NETWORKS });

  constructor(
    private readonly settings: PeerSettings,
    private readonly addresses: ClientAddresses,
  ) {}

  /**
   * Follows `server`'s connections: one past MAX_CONNECTIONS_PER_ADDRESS from its network is
   * destroyed at once, unanswered (what a connection past MAX_CONNECTIONS gets from node), as
   * cheap as a refusal gets; no state is kept for it.
   */
  follow(server: http.Server): void {
    if (this.settings.maxConnectionsPerAddress <= 0 && this.settings.lingerBytesPerSecond <= 0) return;
    server.on('connection', (socket: Socket) => this.admit(socket));
  }

  private admit(socket: Socket): void {
    const peer = socket.remoteAddress;
    // gone before it was seen (a reset in the accept queue): node closes it
    if (peer === undefined || this.addresses.isTrusted(peer)) return;
    const network = clientNetwork(peer);
    const cap = this.settings.maxConnectionsPerAddress;
    if (cap > 0) {
      const open = this.open.get(network) ?? 0;
      if (open >= cap) {
        socket.destroy();
        return;
      }
      this.open.set(network, open + 1);
      socket.once('close', () => {
        const left = this.open.get(network)! - 1;
        if (left === 0) this.open.delete(network);
        else this.open.set(network, left);
      });
    }
    if (this.settings.lingerBytesPerSecond > 0) peers.set(socket, { limits: this, network });
  }

  /** lingerSpend for a connection of `network`. */
  spendLingered(network: string, bytes: number): boolean {
    const { lingerBytesPerSecond: rate, lingerBurstBytes: burst } = this.settings;
    const now = performance.now();
    const bucket = this.lingering.get(network) ?? { bytes: burst, at: now };
    bucket.bytes = Math.min(burst, bucket.bytes + ((now - bucket.at) * rate) / 1000);
    bucket.at = now;
    const allowed = bucket.bytes > 0;
    if (allowed) bucket.bytes -= bytes;
    this.lingering.set(network, bucket, { ttl: Math.max(1, Math.ceil(((burst - bucket.bytes) * 1000) / rate)) });
    return allowed;
  }
}

/**
 * Whether `socket`'s network may still have refused bodies read for it (LINGER_BYTES_PER_SECOND),
 * spending `bytes` (read already) when it may; 0 only asks. A connection not followed (a trusted
 * proxy's, the setting off) always may.
 */
export function lingerSpend(socket: Socket, bytes: number): boolean {
  const peer = peers.get(socket);
  return peer === undefined || peer.limits.spendLingered(peer.network, bytes);
}
