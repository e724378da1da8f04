import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CountingProxy {
  url: string;
  /** Requests forwarded so far, as `METHOD /path` (query strings dropped: they hold the gateway key). */
  requests: string[];
  count(prefix: string): number;
  reset(): void;
  close(): Promise<void>;
}

/**
 * An HTTP proxy on loopback in front of an upstream that counts what passes: the honest measure
 * of how many upstream calls the gateway made.
 */
export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const requests: string[] = [];
  const forward = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0]!;
    requests.push(`${req.method} ${path}`);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(([name]) => !['host', 'connection', 'content-length', 'keep-alive'].includes(name)),
    ) as Record<string, string>;
    try {
      const response = await fetch(`${target}${req.url}`, {
        method: req.method,
        headers,
        body: chunks.length > 0 ? Buffer.concat(chunks) : null,
      });
      const body = Buffer.from(await response.arrayBuffer());
      const out: Record<string, string> = { 'content-type': response.headers.get('content-type') ?? 'application/json' };
      const challenge = response.headers.get('www-authenticate');
      if (challenge) out['www-authenticate'] = challenge;
      res.writeHead(response.status, out);
      res.end(body);
    } catch {
      res.writeHead(502).end();
    }
  };
  const server = http.createServer((req, res) => void forward(req, res));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    count: (prefix) => requests.filter((r) => r.startsWith(prefix)).length,
    reset: () => {
      requests.length = 0;
    },
    close: () => {
      server.closeAllConnections();
      server.close();
      return Promise.resolve();
    },
  };
}
