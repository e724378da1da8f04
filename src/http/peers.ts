import type http from 'node:http';
import type { Socket } from 'node:net';
import { type ClientAddresses, clientNetwork } from '../auth/clientAddress.js';
import type { ServerLimits } from '../ports/limits.js';

// Only node's own modules at run time: listener.ts (loaded before the gateway) uses this.

/**
 * What one client network (clientNetwork: an IPv4 address, an IPv6 /64) may hold of the
 * server's connections, by each connection's peer: a connection is taken or refused before a
 * byte of it is read, so no header (X-Forwarded-For) can count. A proxy in TRUST_PROXY carries
 * every client's connections, and is held only by MAX_CONNECTIONS.
 */
export class PeerLimits {
  /** Open connections by network; a network with none has no entry. */
  private readonly open = new Map<string, number>();

  constructor(
    private readonly limits: Pick<ServerLimits, 'maxConnectionsPerAddress'>,
    private readonly addresses: ClientAddresses,
  ) {}

  /**
   * Follows `server`'s connections: one past MAX_CONNECTIONS_PER_ADDRESS from its network is
   * destroyed at once, unanswered (what a connection past MAX_CONNECTIONS gets from node), as
   * cheap as a refusal gets; no state is kept for it.
   */
  follow(server: http.Server): void {
    if (this.limits.maxConnectionsPerAddress <= 0) return;
    server.on('connection', (socket: Socket) => this.admit(socket));
  }

  private admit(socket: Socket): void {
    const peer = socket.remoteAddress;
    // gone before it was seen (a reset in the accept queue): node closes it
    if (peer === undefined || this.addresses.isTrusted(peer)) return;
    const network = clientNetwork(peer);
    const open = this.open.get(network) ?? 0;
    if (open >= this.limits.maxConnectionsPerAddress) {
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
}
