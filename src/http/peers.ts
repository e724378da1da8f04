import type http from 'node:http';
import type { Socket } from 'node:net';
import { LRUCache } from 'lru-cache';
import { type ClientAddresses, clientNetwork } from '../auth/clientAddress.js';
import type { ServerLimits } from '../config/limits.js';

// Only node's own modules and lru-cache at run time: listener.ts (loaded before the gateway) uses this.

const MAX_LINGERING_NETWORKS = 10_000;

/** What PeerLimits holds each client network to. */
export interface PeerSettings extends Pick<ServerLimits, 'maxConnectionsPerAddress' | 'lingerBytesPerSecond'> {
  lingerBurstBytes: number;
}

const peers = new WeakMap<Socket, { limits: PeerLimits; network: string }>();

/** What one client network may hold of the server, counted by each connection's peer before a byte is read, so no
 * header can spoof it. A proxy in TRUST_PROXY is held only by MAX_CONNECTIONS and each linger's own budgets. */
export class PeerLimits {
  private readonly open = new Map<string, number>();
  private readonly lingering = new LRUCache<string, { bytes: number; at: number }>({ max: MAX_LINGERING_NETWORKS });

  constructor(
    private readonly settings: PeerSettings,
    private readonly addresses: ClientAddresses,
  ) {}

  // one connection past MAX_CONNECTIONS_PER_ADDRESS is destroyed at once, unanswered, with no state kept
  follow(server: http.Server): void {
    if (this.settings.maxConnectionsPerAddress <= 0 && this.settings.lingerBytesPerSecond <= 0) return;
    server.on('connection', (socket: Socket) => this.admit(socket));
  }

  private admit(socket: Socket): void {
    const peer = socket.remoteAddress;
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

/** Whether `socket`'s network may still have refused bodies read for it, spending `bytes`; 0 only asks. */
export function lingerSpend(socket: Socket, bytes: number): boolean {
  const peer = peers.get(socket);
  return peer === undefined || peer.limits.spendLingered(peer.network, bytes);
}
