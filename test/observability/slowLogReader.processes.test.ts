import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe, type ServeProcess } from '../helpers/processes.js';
import { itemsFrom, storeCatalogue } from '../helpers/liveEvents.js';

// A log reader that stops reading (a stuck collector, a busy harness) fills the pipe of the
// gateway's standard output after a few hundred access-log lines. Written synchronously (pino's
// synchronous destination sleeps 100 ms a try while the pipe is full), every further request
// would wait for the reader: forever here. The gateway writes its logs asynchronously, holding
// at most LOG_BUFFER_MAX_BYTES for the reader, so it keeps answering, and once the reader
// reads again every line arrives.

const REQUESTS = 2_000; // about 500 KB of access log: several times a pipe's 64 KiB
const CONCURRENCY = 8;

let dataDir: string;
let serve: ServeProcess;
beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'recs-slowlog-'));
  // a catalogue of its own: on an empty DATA_DIR the start builds the demo shop, which is not the subject here
  await storeCatalogue({ kind: 'sqlite', dataDir }, itemsFrom(1, 12));
  serve = await startServe({ DATA_DIR: dataDir });
}, 60_000);
afterAll(async () => {
  await serve?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('a log reader that stops reading', () => {
  it('does not stall the gateway: every request is answered while the pipe stays full', async () => {
    const stdout = serve.child.stdout!;
    stdout.removeAllListeners('data');
    stdout.pause();
    const agent = new Agent({ connections: CONCURRENCY });
    let next = 0;
    const statuses = new Map<number, number>();
    const worker = async (): Promise<void> => {
      while (next < REQUESTS) {
        next += 1;
        const res = await request(`${serve.url}/healthz`, { dispatcher: agent });
        await res.body.dump();
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      }
    };
    try {
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    } finally {
      await agent.close();
      stdout.resume();
    }
    expect(Object.fromEntries(statuses)).toEqual({ 200: REQUESTS });
    // delayed, not lost: the access-log lines all arrive once the reader reads again
    let text = '';
    stdout.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    const lines = (): number => text.split('\n').filter((line) => line.includes('"path":"/healthz"')).length;
    for (let waited = 0; lines() < REQUESTS && waited < 20_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    expect(lines()).toBe(REQUESTS);
  }, 60_000);
});
