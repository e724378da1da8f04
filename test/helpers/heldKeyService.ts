import { once } from 'node:events';
import http, { type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A key service (node:http) whose checks wait until the test lets them go. */
export interface HeldKeyService {
  url: string;
  /** Checks it was asked to hold, so far. */
  held(): number;
  /** Answers the held checks, and from now on every one at once. */
  release(): void;
  close(): void;
}

/**
 * Starts one. `holds`: which requests (by their Authorization) are held, every one by default; the
 * others are answered at once. Every answer is 200 with `body` (a key listing; [] by default).
 */
export async function startHeldKeyService(options: { holds?: (authorization: string | undefined) => boolean; body?: string } = {}): Promise<HeldKeyService> {
  const holding: ServerResponse[] = [];
  let held = 0;
  let released = false;
  const answer = (res: ServerResponse): void => {
    if (!res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end(options.body ?? '[]');
  };
  const server = http.createServer((req, res) => {
    req.resume();
    if (options.holds !== undefined && !options.holds(req.headers.authorization)) return answer(res);
    held += 1;
    if (released) return answer(res);
    holding.push(res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held: () => held,
    release() {
      released = true;
      for (const res of holding.splice(0)) answer(res);
    },
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}
