/**
 * How long `npm start` takes to answer, on the demo shop (not a test):
 *   npx tsx bench/startup.ts [--runs 5] [--build dist] [--no-build]
 * Spawns the built gateway as `npm start` does (node --no-memory-reducer, `serve`, on a build
 * directory: dist/ by default, or another made with `npx tsc -p tsconfig.build.json --outDir
 * dist-x` to compare), polls /healthz and /readyz every 10 ms from the moment of the spawn, and
 * prints for each run the ms to the first 200 of each; then the median and range. Each round
 * does a first start (an empty DATA_DIR: the administrator is created, the demo shop built) and
 * a restart on the same DATA_DIR. BENCHMARKS.md, "ninth pass".
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';

const { values: flags } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    build: { type: 'string', default: 'dist' },
    'no-build': { type: 'boolean', default: false },
  },
});
const ROOT = path.resolve(import.meta.dirname, '..');
const RUNS = Number(flags.runs);
const BUILD = path.resolve(ROOT, flags.build);

if (flags.build === 'dist' && !flags['no-build']) {
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
}

// bin/recs-gateway.js for the build asked for (a worker thread would inherit an --eval's flags)
const LAUNCHER = path.join(mkdtempSync(path.join(os.tmpdir(), 'recs-gateway-launcher-')), 'launch.mjs');
writeFileSync(LAUNCHER, `import { main } from ${JSON.stringify(path.join(BUILD, 'main.js'))};\nprocess.exitCode = await main(['serve']);\n`);
process.on('exit', () => rmSync(path.dirname(LAUNCHER), { recursive: true, force: true }));

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Ms from the spawn to the first 200 of GET path, polled every 10 ms. */
async function firstOk(url: string, t0: number, exited: () => boolean): Promise<number> {
  for (;;) {
    if (exited()) throw new Error('the gateway exited');
    const ok = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
      async (response) => {
        await response.arrayBuffer();
        return response.status === 200;
      },
      () => false,
    );
    if (ok) return performance.now() - t0;
    await sleep(10);
  }
}

async function once(dataDir: string): Promise<{ healthz: number; readyz: number }> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    ['--no-memory-reducer', LAUNCHER],
    { cwd: ROOT, env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn', REDIS_URL: '' }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let gone = false;
  child.once('exit', () => (gone = true));
  try {
    const base = `http://127.0.0.1:${port}`;
    const [healthz, readyz] = await Promise.all([firstOk(`${base}/healthz`, t0, () => gone), firstOk(`${base}/readyz`, t0, () => gone)]);
    return { healthz, readyz };
  } catch (error) {
    throw new Error(`${(error as Error).message}: ${stderr}`);
  } finally {
    child.kill('SIGTERM');
    if (!gone) await new Promise((resolve) => child.once('exit', resolve));
  }
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const range = (values: number[]): string => `${Math.round(Math.min(...values))} to ${Math.round(Math.max(...values))}`;

const results: Record<'first' | 'restart', { healthz: number[]; readyz: number[] }> = { first: { healthz: [], readyz: [] }, restart: { healthz: [], readyz: [] } };
console.log(`build ${path.relative(ROOT, BUILD)}, ${RUNS} runs, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
for (let run = 1; run <= RUNS; run++) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'recs-gateway-startup-'));
  try {
    for (const kind of ['first', 'restart'] as const) {
      const { healthz, readyz } = await once(dataDir);
      results[kind].healthz.push(healthz);
      results[kind].readyz.push(readyz);
      console.log(`run ${run} ${kind.padEnd(7)}: /healthz 200 after ${Math.round(healthz)} ms, /readyz 200 after ${Math.round(readyz)} ms`);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
for (const kind of ['first', 'restart'] as const) {
  const { healthz, readyz } = results[kind];
  console.log(`${kind.padEnd(7)}: /healthz median ${Math.round(median(healthz))} ms (${range(healthz)}), /readyz median ${Math.round(median(readyz))} ms (${range(readyz)})`);
}
console.log(`load average after: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} (a shared machine: see BENCHMARKS.md, Noise)`);
