import { createHash } from 'node:crypto';
import http from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/env.js';
import { RateLimiter } from '../../src/auth/rateLimit.js';
import { MemoryTokenBuckets } from '../../src/auth/tokenBucket.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { embeddedWithUsers, useEmbeddedGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

/**
 * The GraphiQL page and its files over real HTTP, byte for byte as they travel (node:http: fetch
 * would decompress them): a small page revalidated by ETag, hashed files cached for good, brotli
 * or gzip as the client accepts, and a token of the address's rate limit spent on each.
 */
interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The bytes on the wire (still compressed). */
  body: Buffer;
}

function get(url: string, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

const decode = (raw: Raw): Buffer => {
  const encoding = raw.headers['content-encoding'];
  return encoding === 'br' ? brotliDecompressSync(raw.body) : encoding === 'gzip' ? gunzipSync(raw.body) : raw.body;
};

const BROWSER = { accept: 'text/html,application/xhtml+xml', 'accept-encoding': 'gzip, deflate, br' };

/** The files the page refers to, as URLs under the gateway. */
const filesOf = (html: string, base: string): string[] =>
  [...html.matchAll(/"(graphql\/ide\/[^"]+)"/g)].map((m) => `${base}/${m[1]!}`);

describe('GraphiQL over HTTP: caching and compression', () => {
  const gw = useEmbeddedGateway(storeKinds[0]!);

  it('sends a small page, no-cache with an ETag; a second visit with it gets 304 and no body', async () => {
    const first = await get(`${gw.url}/graphql`, BROWSER);
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toMatch(/^text\/html/);
    expect(first.headers['cache-control']).toBe('no-cache');
    expect(first.headers['content-encoding']).toBe('br');
    expect(first.headers.vary).toMatch(/accept-encoding/i);
    const etag = first.headers.etag!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+-br"$/);
    // the page was 9 MB with the editor inlined; now the editor is a file of its own
    expect(first.body.length).toBeLessThan(2_000);
    expect(decode(first).length).toBeLessThan(4_000);

    const second = await get(`${gw.url}/graphql`, { ...BROWSER, 'if-none-match': etag });
    expect(second.status).toBe(304);
    expect(second.body.length).toBe(0);
    expect(second.headers.etag).toBe(etag);
    // as browsers send it back, weak or among others
    expect((await get(`${gw.url}/graphql`, { ...BROWSER, 'if-none-match': `"nope", W/${etag}` })).status).toBe(304);
    // another encoding is another representation: its own bytes, its own ETag
    const gzipped = await get(`${gw.url}/graphql`, { ...BROWSER, 'accept-encoding': 'gzip', 'if-none-match': etag });
    expect(gzipped.status).toBe(200);
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(decode(gzipped).equals(decode(first))).toBe(true);
  });

  it('serves every file under a name that is its content hash, immutable, revalidated by ETag to a 304', async () => {
    const html = decode(await get(`${gw.url}/graphql`, BROWSER)).toString('utf8');
    const files = filesOf(html, gw.url);
    expect(files.length).toBe(6); // icon, stylesheet, editor, three Monaco workers
    for (const url of files) {
      const raw = await get(url, { 'accept-encoding': 'br' });
      expect(raw.status, url).toBe(200);
      expect(raw.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      const name = url.slice(url.lastIndexOf('/') + 1).split('.')[0]!;
      expect(createHash('sha256').update(decode(raw)).digest('base64url').slice(0, 22)).toBe(name);
      const again = await get(url, { 'accept-encoding': 'br', 'if-none-match': raw.headers.etag! });
      expect(again.status).toBe(304);
      expect(again.body.length).toBe(0);
    }
    expect((await get(`${gw.url}/graphql/ide/nothing.js`)).status).toBe(404);
  });

  it('compresses a first visit to under a third of its size with brotli, and gzip for clients without it', async () => {
    const sizes = { br: 0, gzip: 0, identity: 0 };
    for (const encoding of ['br', 'gzip', 'identity'] as const) {
      const page = await get(`${gw.url}/graphql`, { ...BROWSER, 'accept-encoding': encoding });
      sizes[encoding] += page.body.length;
      for (const url of filesOf(decode(page).toString('utf8'), gw.url)) {
        const raw = await get(url, { 'accept-encoding': encoding });
        expect(raw.headers['content-encoding']).toBe(encoding === 'identity' ? undefined : encoding);
        expect(Number(raw.headers['content-length'])).toBe(raw.body.length);
        sizes[encoding] += raw.body.length;
      }
    }
    // measured: 8.9 MB as it is, 2.4 MB gzipped, 2.1 MB with brotli (the old page: 9 MB, or 2 MB gzipped, every visit)
    expect(sizes.identity).toBeGreaterThan(8_000_000);
    expect(sizes.gzip).toBeLessThan(sizes.identity * 0.33);
    expect(sizes.br).toBeLessThan(sizes.gzip);
  }, 60_000);
});

describe('GraphiQL under the rate limit of the client address', () => {
  let gateway: Gateway;
  let url: string;
  let dispose: () => Promise<void>;
  let now = 1_000_000;

  beforeAll(async () => {
    const opened = await storeKinds[0]!.open();
    dispose = opened.dispose;
    const config = loadConfig({ DATA_DIR: '/nonexistent', RATE_LIMIT_RPS: '1', RATE_LIMIT_BURST: '3', AUTH_FAILURES_PER_MINUTE: '0' });
    // the buckets' clock stands still unless the test moves it: no refill between requests
    const limiter = new RateLimiter(new MemoryTokenBuckets(1_000, () => now), config.rateLimits);
    gateway = await createGateway({ config, backend: await embeddedWithUsers(opened.store), limiter });
    url = await gateway.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await gateway?.stop().catch(() => undefined);
    await dispose?.();
  });

  it('answers the burst, then 429 with Retry-After for the page and its files, until a token comes back', async () => {
    const statuses: number[] = [];
    let html = '';
    for (let i = 0; i < 3; i++) {
      const page = await get(`${url}/graphql`, BROWSER);
      statuses.push(page.status);
      html = decode(page).toString('utf8');
    }
    const over = await get(`${url}/graphql`, BROWSER);
    statuses.push(over.status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(Number(over.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(over.body.toString('utf8'))).toMatchObject({ errors: [{ extensions: { code: 'RATE_LIMITED' } }] });
    const file = filesOf(html, url).find((u) => u.endsWith('.js'))!;
    const refused = await get(file, { 'accept-encoding': 'br' });
    expect(refused.status).toBe(429);
    expect(refused.body.length).toBeLessThan(200);

    now += 1_000; // one token a second
    expect((await get(file, { 'accept-encoding': 'br' })).status).toBe(200);
    expect((await get(`${url}/graphql`, BROWSER)).status).toBe(429);
  });
});
