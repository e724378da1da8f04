import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/main.js';
import { runEvaluate } from '../../src/cli/evaluateCommand.js';
import { runImport } from '../../src/cli/importCommand.js';
import { tempDir } from '../helpers/stores.js';

/** A stream that keeps what is written to it. */
function collect(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { stream, text: () => text };
}

/** Runs the command line in this process with `env`; resolves with its exit code and output. */
async function run(argv: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = collect();
  const stderr = collect();
  const stdin = new PassThrough();
  stdin.end('');
  const code = await main(argv, { stdout: stdout.stream, stderr: stderr.stream, stdin, env: { LOG_LEVEL: 'warn', ...env } });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

// Diginetica's purchase log, the file the probe gave evaluate as views: not one line reads as a view
const PURCHASES = 'sessionId;userId;timeframe;eventdate;ordernumber;itemId\n150;NA;1077;2016-05-26;21034;1203\n151;NA;3000;2016-05-26;21035;1204\n';
const VIEWS = 'session_id;user_id;item_id;timeframe;eventdate\n1;NA;100;10;2016-05-09\n1;NA;107;20;2016-05-09\n2;NA;100;10;2016-05-10\n2;NA;107;30;2016-05-10\n';

describe('the command line’s messages', () => {
  const dirs: { remove(): void }[] = [];
  const dir = (): string => {
    const d = tempDir();
    dirs.push(d);
    return d.dir;
  };
  afterAll(() => {
    for (const d of dirs) d.remove();
  });

  it('names an unknown option in one line, with where the options are listed, in every command', async () => {
    const cases: [string[], string][] = [
      [['user', 'add', 'x', '--admn'], 'unknown option --admn; see recs-gateway user --help\n'],
      [['serve', '--port', '80'], 'unknown option --port; see recs-gateway serve --help\n'],
      [['import', 'events', 'f.csv', '--fromat', 'csv'], 'unknown option --fromat; see recs-gateway import --help\n'],
      [['evaluate', '--view', 'f.csv'], 'unknown option --view; see recs-gateway evaluate --help\n'],
      [['prune', 'events', '--dryrun'], 'unknown option --dryrun; see recs-gateway prune --help\n'],
      [['import', 'events', 'f.csv', '--format'], '--format needs a value; see recs-gateway import --help\n'],
      [['user', 'add', 'x', '--admin=yes'], '--admin takes no value; see recs-gateway user --help\n'],
    ];
    for (const [argv, line] of cases) {
      const result = await run(argv, { DATA_DIR: dir() });
      expect([result.code, result.stderr, result.stdout], argv.join(' ')).toEqual([2, line, '']);
    }
  });

  it('says in one line what is missing, and where the help is, when a command is given too little', async () => {
    const cases: [string[], string][] = [
      [['evaluate'], 'no event files given: name them with --events <file> --format <format>, or --views and --purchases; see recs-gateway evaluate --help\n'],
      [['evaluate', '--events', 'f.csv'], '--events f.csv needs a --format; see recs-gateway evaluate --help\n'],
      [['import'], 'expected "import events <file>" or "import catalog <file>"; see recs-gateway import --help\n'],
      [['import', 'events'], 'name the file to import: import events <file>; see recs-gateway import --help\n'],
      [['import', 'catalog'], 'name the file to import: import catalog <file>; see recs-gateway import --help\n'],
      [['import', 'events', 'a.csv', 'b.csv', '--format', 'instacart'], 'unexpected argument b.csv: one file an import; see recs-gateway import --help\n'],
      [['prune'], 'expected "prune events"; see recs-gateway prune --help\n'],
    ];
    for (const [argv, line] of cases) {
      const result = await run(argv, { DATA_DIR: dir() });
      expect([result.code, result.stderr, result.stdout], argv.join(' ')).toEqual([2, line, '']);
    }
    // the help is where the line says
    const help = await run(['evaluate', '--help']);
    expect([help.code, help.stderr]).toEqual([0, '']);
    expect(help.stdout).toMatch(/^Usage:\n  recs-gateway evaluate --events <file> --format <format>/);
  });

  it('says a subcommand is unknown before showing the usage', async () => {
    const unknown = await run(['user', 'lsit']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^unknown subcommand: lsit\n\nUsage: recs-gateway user <subcommand>[^]*\n {2}user add <username>/);
    const help = await run(['user', '--help']);
    expect([help.code, help.stderr]).toEqual([0, '']);
    expect(help.stdout).toMatch(/^Usage: recs-gateway user <subcommand>[^]*\n {2}user passwd <username>/);
  });

  it('stops evaluate, as import, on a file that yields no event: one line naming the file and what was expected', async () => {
    const purchases = path.join(dir(), 'purchases.csv');
    writeFileSync(purchases, PURCHASES);
    const stdout = collect();
    const stderr = collect();
    expect(await runEvaluate(['--views', purchases], { stdout: stdout.stream, stderr: stderr.stream })).toBe(1);
    // no table of zeros
    expect(stdout.text()).toBe('');
    const last = stderr.text().trimEnd().split('\n').at(-1);
    expect(last).toBe(`recs-gateway: nothing in ${purchases} could be read as diginetica-views events (expected session_id;user_id;item_id;timeframe;eventdate): 2 malformed lines; fix the file or its --format`);

    // import says the same of the same file, through the same check
    const imported = collect();
    expect(await runImport(['events', purchases, '--format', 'diginetica-views'], { dataDir: dir(), stdout: collect().stream, stderr: imported.stream })).toBe(1);
    expect(imported.text()).toContain(`recs-gateway: nothing in ${purchases} could be read as diginetica-views events (expected session_id;user_id;item_id;timeframe;eventdate): 2 malformed lines; nothing was recorded`);
  });

  it('stops a catalogue import of a file that holds no record: the first 100 lines, a count of the rest, and one line that names no --format (a catalogue has none)', async () => {
    const notJson = path.join(dir(), 'passwd');
    writeFileSync(notJson, Array.from({ length: 150 }, (_, i) => `user${i}:x:${i}:${i}::/home/user${i}:/bin/sh`).join('\n'));
    const out = collect();
    const errors = collect();
    expect(await runImport(['catalog', notJson], { dataDir: dir(), stdout: out.stream, stderr: errors.stream })).toBe(1);
    expect(out.text()).toBe('');
    const lines = errors.text().trimEnd().split('\n');
    expect(lines).toHaveLength(102);
    expect(lines[0]).toMatch(new RegExp(`^${notJson}:1: skipped: not JSON: `));
    expect(lines[100]).toBe('... and 50 more skipped records');
    expect(lines[101]).toBe(`recs-gateway: nothing in ${notJson} could be read as item records (expected a JSON array of records, an object with an "items" array, or JSON lines): 150 skipped; nothing was recorded, so the import can be run again once the file is fixed`);
  });

  it('says in one line, as import does, why evaluate cannot read a file: no stack, no raw errno text', async () => {
    const missing = path.join(dir(), 'nothing-here.csv');
    const folder = dir();
    const cases: [string[], string][] = [
      [['--events', missing, '--format', 'retailrocket'], `recs-gateway: cannot read ${missing}: no such file or directory\n`],
      [['--events', folder, '--format', 'retailrocket'], `recs-gateway: cannot read ${folder}: it is a directory, not a file\n`],
    ];
    for (const [argv, line] of cases) {
      const out = collect();
      const errors = collect();
      expect(await runEvaluate(argv, { stdout: out.stream, stderr: errors.stream }), argv.join(' ')).toBe(1);
      expect([errors.text(), out.text()]).toEqual([line, '']);
    }
  });

  it('counts an import’s items without a record in good English', async () => {
    const dataDir = dir();
    const one = path.join(dir(), 'one.csv');
    writeFileSync(one, 'session_id;user_id;item_id;timeframe;eventdate\n1;NA;100;10;2016-05-09\n2;NA;100;10;2016-05-10\n');
    const out = collect();
    expect(await runImport(['events', one, '--format', 'diginetica-views'], { dataDir, stdout: out.stream, stderr: collect().stream })).toBe(0);
    expect(out.text()).toContain('\n1 of its items has no record: ');
    const two = path.join(dir(), 'two.csv');
    writeFileSync(two, VIEWS);
    const out2 = collect();
    expect(await runImport(['events', two, '--format', 'diginetica-views'], { dataDir, stdout: out2.stream, stderr: collect().stream })).toBe(0);
    expect(out2.text()).toContain('\n2 of its items have no record: ');
  });
});
