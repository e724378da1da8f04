import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ClientAddresses } from '../auth/clientAddress.js';
import type { ErrorCode } from '../errors.js';
import type { ServerLimits } from '../config/limits.js';
import { Cors } from './cors.js';
import { corsMethods } from './routeTable.js';
import { LINGER_MAX_BYTES, lingerAfterAnswer } from './linger.js';
import { PeerLimits } from './peers.js';

// Only node's own modules at run time: `serve` answers /healthz before the rest of the gateway loads.

/** The node:http server with the client limits (timeouts, connection caps, lingering); `trustProxy`: TRUST_PROXY. */
export function createHttpServer(limits: ServerLimits, trustProxy: readonly string[] = []): http.Server {
  const server = http.createServer({
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // node's default check interval (30 s) would stretch the timeouts
    connectionsCheckingInterval: Math.max(25, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4))),
    // node's own 400 for a missing Host is empty: refusedWithoutHost answers it instead
    requireHostHeader: false,
  });
  if (limits.maxConnections > 0) server.maxConnections = limits.maxConnections;
  new PeerLimits({ ...limits, lingerBurstBytes: LINGER_MAX_BYTES }, new ClientAddresses(trustProxy)).follow(server);
  return server;
}

// ErrorCode's own is Apollo's enum, which this module does not load
const NO_HOST_CODE: `${ErrorCode}` = 'BAD_REQUEST';
const NO_HOST_BODY = JSON.stringify({ errors: [{ message: 'An HTTP/1.1 request must carry a Host header', extensions: { code: NO_HOST_CODE } }] });
const NO_HOST_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'application/json; charset=utf-8',
  'content-length': String(Buffer.byteLength(NO_HOST_BODY)),
  connection: 'close',
};

/** Answers an HTTP/1.1 request without a Host header with a JSON 400 and returns true; false for any other. */
export function refusedWithoutHost(req: IncomingMessage, res: ServerResponse, cors: Cors | null): boolean {
  if (req.headers.host !== undefined || req.httpVersionMajor !== 1 || req.httpVersionMinor !== 1) return false;
  cors?.allowFor(res, req.headers.origin);
  lingerAfterAnswer(req, res);
  res.writeHead(400, NO_HOST_HEADERS);
  res.end(NO_HOST_BODY);
  return true;
}

/** Where a listening server is, as bound, and a URL to reach it from this machine. */
export interface ListenAddress {
  address: string;
  port: number;
  allInterfaces: boolean;
  localUrl: string;
}

/** A listening server's ListenAddress. */
export function listenAddress(server: http.Server): ListenAddress {
  const { address, port, family } = server.address() as AddressInfo;
  const allInterfaces = address === '::' || address === '0.0.0.0';
  const local = allInterfaces ? '127.0.0.1' : family === 'IPv6' ? `[${address}]` : address;
  return { address, port, allInterfaces, localUrl: `http://${local}:${port}` };
}

/** Listens; rejects with the listen error as node gives it. */
export function listen(server: http.Server, port: number, host: string | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Seconds a client is asked to wait (Retry-After) while the gateway starts. */
export const STARTING_RETRY_AFTER_S = 1;

/** The server's answers while the gateway starts: /healthz 200, /readyz 503, every other request 503 with
 * UPSTREAM_UNAVAILABLE, which clients already retry (a new code would break clients that switch on the closed set). */
export class StartingAnswers {
  private step = 'loading the gateway';
  private readonly handler = (req: IncomingMessage, res: ServerResponse): void => this.answer(req, res);
  private readonly cors: Cors | null;

  constructor(private readonly server: http.Server, corsOrigins: readonly string[] | '*' | null = null) {
    this.cors = corsOrigins ? new Cors(corsOrigins) : null;
    server.on('request', this.handler);
  }

  waitFor(step: string): void {
    this.step = step;
  }

  handOver(): void {
    this.server.off('request', this.handler);
  }

  private answer(req: IncomingMessage, res: ServerResponse): void {
    if (refusedWithoutHost(req, res, this.cors)) return;
    const target = req.url ?? '/';
    const query = target.indexOf('?');
    const path = query === -1 ? target : target.slice(0, query);
    if (this.cors !== null && req.headers.origin !== undefined) {
      const methods = corsMethods(path);
      if (methods !== null && this.cors.apply(req, res, req.headers.origin, methods)) return;
    }
    const length = req.headers['content-length'];
    const closing = (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
    if (closing) lingerAfterAnswer(req, res);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': String(Buffer.byteLength(text)),
        ...headers,
        ...(closing ? { connection: 'close' } : {}),
      });
      res.end(text);
    };
    const retry = { 'retry-after': String(STARTING_RETRY_AFTER_S) };
    const message = `The gateway is starting (${this.step}): retry in ${STARTING_RETRY_AFTER_S} s`;
    if (path === '/healthz') return send(200, { status: 'ok' });
    if (path === '/readyz') return send(503, { status: 'starting', waitingFor: this.step }, retry);
    if (path === '/api/v1/apikey' || path.startsWith('/api/v1/apikey/')) return send(503, [{ id: '*', message }], retry);
    if (path.startsWith('/v1/')) {
      const trimmed = path.replace(/\/+$/, '');
      const ingest = trimmed === '/v1/events' || (trimmed === '/v1/items' && req.method === 'PUT');
      return send(503, { errors: [{ code: 503, message: ingest ? message : 'Service Unavailable' }] }, retry);
    }
    const code: ErrorCode = 'UPSTREAM_UNAVAILABLE';
    send(503, { errors: [{ message, extensions: { code, service: 'gateway', retryAfter: STARTING_RETRY_AFTER_S } }] }, retry);
  }
}
