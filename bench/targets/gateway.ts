/**
 * A benchmark target (not a test): the gateway as `recs-gateway serve` builds it, from the same
 * environment variables, in its own process so that the load generator does not share its core.
 * Prints one JSON line {"url": ...} once it listens. Bench-only switches, never read by src/:
 *   BENCH_STUB_AUTH=1      authenticate() returns a fixed principal without any lookup, to
 *                          measure what authentication costs (the header is still required)
 *   BENCH_COUNT_CALLS=1    counts requests by path; GET /__bench/calls returns and resets them
 *                          (used on the upstream, to count the calls a query causes)
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type * as AuthModule from '../../src/auth/authorization.js';
import type * as BackendsModule from '../../src/backends/index.js';
import type { PrincipalModel } from '../../src/backends/types.js';
import type * as CacheModule from '../../src/cache/index.js';
import type * as ConfigModule from '../../src/config.js';
import type * as RateLimitModule from '../../src/protection/rateLimit.js';
import type * as ServerModule from '../../src/server.js';

// The compiled dist/ (bench/run.ts builds it first), as `npm start` runs it. Through tsx the
// server was about a third slower: esbuild's keep-names wraps every closure made per request.
const dist = (file: string): string => new URL(`../../dist/${file}`, import.meta.url).href;
const { openBackend } = (await import(dist('backends/index.js'))) as typeof BackendsModule;
const { openCache } = (await import(dist('cache/index.js'))) as typeof CacheModule;
const { loadConfig } = (await import(dist('config.js'))) as typeof ConfigModule;
const { createGateway } = (await import(dist('server.js'))) as typeof ServerModule;
const { RateLimiter } = (await import(dist('protection/rateLimit.js'))) as typeof RateLimitModule;
const { credentialId, withAuthorization } = (await import(dist('auth/authorization.js'))) as typeof AuthModule;

const config = loadConfig(process.env);
const cache = openCache(config);
const backend = await openBackend(config, { cache });

if (process.env.BENCH_STUB_AUTH === '1') {
  const fixed: Omit<PrincipalModel, 'authorization'> = {
    user: { id: '00000000-0000-4000-8000-000000000000', username: 'bench', domain: null, isAdmin: false },
    authenticatedBy: 'API_KEY',
    keyId: null,
    credentialId: credentialId('bench'),
  };
  backend.keys.authenticate = async (authorization: string) => withAuthorization(fixed, authorization);
}

// the rate limits as `recs-gateway serve` sets them up: in Redis when REDIS_URL is set
const limiter = RateLimiter.open(config.rateLimits, { url: config.redisUrl, keyPrefix: config.redisKeyPrefix });
const gateway = await createGateway({ config, backend, cache, limiter });

if (process.env.BENCH_COUNT_CALLS === '1') {
  const calls: Record<string, number> = {};
  const listeners = gateway.httpServer.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  gateway.httpServer.removeAllListeners('request');
  gateway.httpServer.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path === '/__bench/calls') {
      const body = JSON.stringify(calls);
      for (const name of Object.keys(calls)) delete calls[name];
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      return;
    }
    const route = path.startsWith('/v1/items/') ? '/v1/items/:id' : path;
    calls[route] = (calls[route] ?? 0) + 1;
    for (const listener of listeners) listener(req, res);
  });
}

const url = await gateway.listen(0, '127.0.0.1');
process.stdout.write(`${JSON.stringify({ url })}\n`);
const stop = (): void => {
  gateway.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
