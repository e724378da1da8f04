import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/stores.js';

// Large distinct query texts must not pile up in the gateway's heap: each cache that keeps a
// parsed document keeps its whole source text (loc.source), and the text can be mostly comment.
// In npm test, test/graphql/pipeline/boundedCaches.test.ts checks the weights that bound those caches.

const FIXTURE = new URL('./fixtures/heapGateway.ts', import.meta.url).pathname;
const MiB = 1024 * 1024;

describe('the heap under large distinct queries', () => {
  const dir = tempDir();
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', FIXTURE, path.join(dir.dir, 'keys.db')], {
    cwd: new URL('../../', import.meta.url).pathname,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const nextLine = async (): Promise<string> => {
    const next = await lines.next();
    if (next.done === true) throw new Error('the gateway process ended');
    return next.value;
  };
  let url: string;
  const heapUsed = async (): Promise<number> => {
    child.stdin.write('heap\n');
    return Number(await nextLine());
  };
  const post = async (query: string) => {
    const response = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
    return { status: response.status, body: await response.text() };
  };

  beforeAll(async () => {
    url = await nextLine();
  }, 60_000);
  afterAll(async () => {
    child.stdin.write('stop\n');
    await once(child, 'exit');
    dir.remove();
  });

  /**
   * How much the heap grew over `count` distinct queries (query(0) to query(count - 1)), each
   * answered `status`, after 20 others (query(count) to query(count + 19)): both paths have
   * answered a few, and Apollo has taught the prepared path this Accept.
   */
  async function heapGrowth(count: number, query: (n: number) => string, status: number): Promise<number> {
    for (let n = 0; n < 20; n++) expect((await post(query(count + n))).status).toBe(status);
    const before = await heapUsed();
    for (let n = 0; n < count; n++) {
      const answer = await post(query(n));
      if (answer.status !== status) expect(answer.body).toBe('an answer');
    }
    return (await heapUsed()) - before;
  }

  it('stays within 40 MiB after 2,000 distinct queries of 64 KiB and more', async () => {
    const QUERIES = 2_000;
    const padding = 'x'.repeat(64 * 1024);
    const query = (n: number) => `#${n} ${padding}\n{ viewer { id } }`;
    const grown = await heapGrowth(QUERIES, query, 200);
    // the texts sent add up to 128 MiB; before, Apollo's document cache kept every one of them
    expect(grown / MiB, `the heap grew by ${(grown / MiB).toFixed(1)} MiB`).toBeLessThan(40);
  }, 120_000);

  it('stays within 60 MiB after 300 distinct dense queries of 3.5 KB, sent without credentials', async () => {
    // a parsed document holds its tokens, a few hundred bytes each: 15 lists of 100 ids are 1,750
    // tokens in 3.5 KB, about 550 KB of heap, and a cache sized by characters kept 1,000 of them.
    // 300 of them (600 took 81 s of a CI run): the heap grew by 119 MiB before the fix (340 MiB
    // for 600), and by 13 MiB after it for 600, the caches' byte budgets holding
    const QUERIES = 300;
    const ids = Array.from({ length: 100 }, (_, k) => 1 + (k % 9)).join(' ');
    const query = (n: number) => `{ ${Array.from({ length: 15 }, (_, j) => `x${n}_${j}: items(itemIds: [${ids}]) { name }`).join(' ')} }`;
    expect(query(0).length).toBeLessThan(4000);
    const grown = await heapGrowth(QUERIES, query, 401);
    // 340 MiB for 600 before: the prepared path's templates and documents kept them by their characters
    expect(grown / MiB, `the heap grew by ${(grown / MiB).toFixed(1)} MiB`).toBeLessThan(60);
  }, 120_000);
});
