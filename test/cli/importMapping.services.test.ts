import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import type { RecsSource } from '../../src/backends/embedded/liveStore.js';
import { openRecsData } from '../../src/backends/embedded/loadFromStore.js';
import { runImport, type CommandIo } from '../../src/cli/importCommand.js';
import { DATABASE_URL, dropSchema, tempDir, testSchema } from '../helpers/stores.js';

/** Runs `import` against `io`'s store; resolves with its exit code and output. */
async function importing(argv: string[], io: Pick<CommandIo, 'dataDir' | 'databaseUrl' | 'schema'>): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = new PassThrough().on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const err = new PassThrough().on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await runImport(argv, { ...io, stdout: out, stderr: err });
  return { code, stdout, stderr };
}

// a session column and a time column: --session time reads every line as a session of its own
const LOG = 'session,item,time\ns1,101,2024-03-01T10:00:00Z\ns1,102,2024-03-01T10:01:00Z\ns2,101,2024-03-01T11:00:00Z\ns2,103,2024-03-01T11:02:00Z\n';
const WRONG = ['--format', 'csv', '--item', 'item', '--session', 'time'];
const RIGHT = ['--format', 'csv', '--item', 'item', '--session', 'session', '--time', 'time'];

const kinds: { name: string; fresh(): { io: Pick<CommandIo, 'dataDir' | 'databaseUrl' | 'schema'>; source: RecsSource; dispose: () => Promise<void> } }[] = [
  {
    name: 'SQLite',
    fresh() {
      const { dir, remove } = tempDir('recs-mapping-');
      return { io: { dataDir: dir }, source: { kind: 'sqlite', dataDir: dir }, dispose: () => Promise.resolve(remove()) };
    },
  },
  {
    name: 'PostgreSQL',
    fresh() {
      const schema = testSchema();
      const { dir, remove } = tempDir('recs-mapping-pg-');
      return {
        io: { dataDir: dir, databaseUrl: DATABASE_URL, schema },
        source: { kind: 'postgres', connectionString: DATABASE_URL, schema },
        dispose: async () => {
          await dropSchema(schema);
          remove();
        },
      };
    },
  },
];

describe.each(kinds)('an import is known by its content and its column mapping ($name)', (kind) => {
  const disposals: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const dispose of disposals) await dispose();
  });
  const fresh = () => {
    const f = kind.fresh();
    disposals.push(f.dispose);
    const file = path.join(f.io.dataDir, 'log.csv');
    writeFileSync(file, LOG);
    /** The store's finished imports, as (format, records), and its events' sessions. */
    const stored = async () => {
      const store = (await openRecsData(f.source))!;
      try {
        const imports = (await store.imports()).filter((i) => i.finishedAt !== null).map((i) => [i.format, i.records]);
        return { imports, events: (await store.counts()).events };
      } finally {
        await store.close();
      }
    };
    return { ...f, file, stored };
  };

  it('does nothing for the same mapping, refuses another one in one line, and --replace imports it that way', async () => {
    const { io, file, stored } = fresh();
    expect((await importing(['events', file, ...WRONG], io)).code).toBe(0);
    const wrongMapping = 'csv --item item --session time --kind view --delimiter ,';
    expect(await stored()).toEqual({ imports: [[wrongMapping, 4]], events: 4 });

    const same = await importing(['events', file, ...WRONG], io);
    expect(same.code).toBe(0);
    expect(same.stdout).toMatch(/was already imported \(import #\d+, 4 records, .*\); nothing to do/);

    // the probe: the corrected mapping said "already imported … nothing to do"
    const corrected = await importing(['events', file, ...RIGHT], io);
    expect(corrected.code).toBe(1);
    expect(corrected.stdout).toBe('');
    expect(corrected.stderr).toMatch(
      new RegExp(`^recs-gateway: ${file} was imported as ${wrongMapping} \\(import #\\d+, 4 records, [^)]*\\), not as csv --item item --session session --time time --kind view --delimiter ,; --replace imports it again this way \\(dropping what import #\\d+ stored\\)\\n$`),
    );
    expect(await stored()).toEqual({ imports: [[wrongMapping, 4]], events: 4 });

    const replaced = await importing(['events', file, ...RIGHT, '--replace'], io);
    expect(replaced.code).toBe(0);
    expect(replaced.stdout).toContain('replaced 1 earlier import(s)');
    const rightMapping = 'csv --item item --session session --time time --kind view --delimiter ,';
    expect(await stored()).toEqual({ imports: [[rightMapping, 4]], events: 4 });

    // flags in another order, and a default spelled out, read the file the same way
    const again = await importing(['events', file, '--time', 'time', '--delimiter', ',', ...RIGHT], io);
    expect([again.code, again.stdout]).toEqual([0, expect.stringContaining('nothing to do')]);
    // a preset is its name, as stored before: unchanged
    expect((await importing(['events', file, '--format', 'retailrocket'], io)).stderr).toContain(`was imported as ${rightMapping}`);
  });

  it('counts a csv import recorded before mappings were (format "csv") as done, and says --replace re-imports it', async () => {
    const { io, file, source, stored } = fresh();
    const sha256 = createHash('sha256').update(readFileSync(file)).digest('hex');
    const store = (await openRecsData(source))!;
    try {
      const session = await store.beginImport('events', 'csv', file, sha256);
      await session.addEvents([{ kind: 'view', session: 's1', user: null, itemId: 101, time: Date.parse('2024-03-01T10:00:00Z'), orderId: null }]);
      await session.finish(1, 0);
    } finally {
      await store.close();
    }
    const rerun = await importing(['events', file, ...RIGHT], io);
    expect(rerun.code).toBe(0);
    expect(rerun.stdout).toMatch(/was already imported \(import #\d+, 1 record, .*\) by an earlier version, which did not record its columns; nothing to do\. If they were not these \(csv --item item --session session --time time --kind view --delimiter ,\), --replace imports it again with them\.\n$/);
    expect(await stored()).toEqual({ imports: [['csv', 1]], events: 1 });
  });
});
