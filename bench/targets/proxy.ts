/**
 * A benchmark target (not a test): the floor for a cold request. One more HTTP hop and nothing
 * else: node:http reads a GraphQL request body for its `variables.itemId`, asks the upstream's
 * /v1/nbp for it over an undici Pool (as the gateway's REST backend does: keep-alive, the whole
 * body read) and answers the upstream's bytes as they are. No schema, no parsing of the records,
 * no cache. Prints {"url": ...} once it listens.
 *   BENCH_UPSTREAM_URL   the REST upstream's origin
 *   RECS_API_KEY         the key the gateway sends it
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';

const pool = new Pool(process.env.BENCH_UPSTREAM_URL!, { connections: 50 });
const apiKey = encodeURIComponent(process.env.RECS_API_KEY!);

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const { variables } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { variables: { itemId: number } };
    pool
      .request({ method: 'GET', path: `/v1/nbp?apiKey=${apiKey}&itemId=${variables.itemId}`, headers: { accept: 'application/json' } })
      .then(async ({ statusCode, body }) => {
        const bytes = Buffer.from(await body.arrayBuffer());
        res.writeHead(statusCode, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(bytes.length) });
        res.end(bytes);
      })
      .catch(() => {
        res.writeHead(502).end();
      });
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
process.on('SIGTERM', () => server.close(() => void pool.close().then(() => process.exit(0))));
