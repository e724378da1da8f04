import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe, type ServeProcess } from '../helpers/processes.js';

// /readyz answers anyone (load balancers ask it without credentials): what the recommender
// follows is said by kind, never by where it is (a path under DATA_DIR, or PostgreSQL's host,
// port and database), as a probe of the running gateway found it did.

let dataDir: string;
let serve: ServeProcess;
beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'recs-readyz-exposure-'));
  serve = await startServe({ DATA_DIR: dataDir });
}, 90_000);
afterAll(async () => {
  await serve?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('/readyz to a stranger', () => {
  it('names the store by kind, not by path', async () => {
    const response = await fetch(`${serve.url}/readyz`);
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(text).not.toContain(dataDir);
    const body = JSON.parse(text) as { recommender: { store: string | null; followError: string | null } };
    expect(body.recommender.store).toBe('sqlite');
    expect(body.recommender.followError).toBeNull();
  }, 30_000);
});
