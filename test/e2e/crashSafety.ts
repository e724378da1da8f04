import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { SqliteKeyStore } from '../../src/backends/embedded/keys/sqliteStore.js';
import { TEST_COST, tempDir } from '../helpers/stores.js';
import { addUser } from '../../src/backends/embedded/keys/users.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const WRITER = path.join(ROOT, 'test/e2e/fixtures/keyWriter.ts');

export interface CrashRun {
  iterations: number;
  acknowledged: number;
  /** Acknowledged creates missing after a crash: must stay 0. */
  lost: number;
  /** Every integrity_check result that was not 'ok'. */
  corrupt: string[];
  /** Duplicate key#<n> names found: must stay 0. */
  duplicateNames: number;
}

/**
 * SIGKILLs a key writer `iterations` times at random moments (after 20 to 300 ms of writing), and
 * after each kill reopens the file and checks that every acknowledged create is there and that
 * SQLite's integrity_check is ok.
 */
export async function crashWriter(iterations: number): Promise<CrashRun> {
  const { dir, remove } = tempDir('recs-reliability-crash-');
  const file = path.join(dir, 'keys.db');
  const run: CrashRun = { iterations: 0, acknowledged: 0, lost: 0, corrupt: [], duplicateNames: 0 };
  try {
    const setup = new SqliteKeyStore(file);
    const user = await addUser(setup, { username: 'writer', password: 'writer-password' }, TEST_COST);
    await setup.close();
    const acked = new Map<string, string>();
    for (let i = 0; i < iterations; i++) {
      const child = spawn(process.execPath, ['--import', 'tsx', WRITER, file, user.id], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      let buffered = '';
      let ready: () => void = () => undefined;
      const started = new Promise<void>((resolve) => (ready = resolve));
      child.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop()!; // a line cut by the kill was not acknowledged
        for (const line of lines) {
          if (line === 'ready') ready();
          else {
            const [id, hash] = line.split(' ');
            acked.set(id!, hash!);
          }
        }
      });
      const exited = once(child, 'exit');
      await Promise.race([started, exited]);
      if (child.exitCode !== null) throw new Error(`the writer exited: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 280));
      child.kill('SIGKILL');
      await exited;
      run.iterations++;

      const store = new SqliteKeyStore(file);
      try {
        const integrity = store.integrityCheck();
        if (integrity !== 'ok') run.corrupt.push(integrity);
        const keys = await store.listKeys(user.id);
        const present = new Set(keys.map((k) => k.id));
        for (const [id, hash] of acked) {
          if (!present.has(id) || (await store.findKeyByHash(hash))?.key.id !== id) run.lost++;
        }
        run.duplicateNames = keys.length - new Set(keys.map((k) => k.name)).size;
      } finally {
        await store.close();
      }
    }
    run.acknowledged = acked.size;
    return run;
  } finally {
    remove();
  }
}
