/**
 * A valid key's cached query while one client attacks (not a test): issue 41's findings 1, 3 and 6.
 *   npm run build && npx tsx bench/underAttack.ts <quiet|introspection|bytes|dense>
 * Starts the built gateway as `npm start` runs it (its settings untouched, a fresh DATA_DIR), asks
 * a signed-in key's cached query at 40/s from this process for 5 s quiet, then again for 8 s while
 * the attacker (this script again, as a third process) runs; prints p50 and p90 of each phase, and
 * the share of a core the gateway used in each (from /proc).
 * - introspection: an anonymous body of 30 aliases of __type(name: "Query") through fragments, 3/s;
 * - bytes: an administrator stores 100 records of 16 KB; a non-administrator sends 30 aliases of
 *   items(itemIds: $ids) { longDescription } over them, three at a time;
 * - dense: another key sends 46 distinct 3.9 KB query texts a second (85 fragments each).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { typeAliasesQuery } from '../test/helpers/attacks.js';

const ROOT = new URL('../', import.meta.url).pathname;
const ITEM = 31000005;
const [mode, scenario = 'quiet'] = process.argv[2] === '--attacker' ? ['attacker', process.argv[3]] : ['victim', process.argv[2]];

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const response = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: response.status, text: await response.text() };
}

/** The attacker's loop, in its own process: until SIGTERM, then its answers' statuses. */
async function attack(url: string, admin: string, user: string, key: string): Promise<void> {
  const statuses: Record<number, number> = {};
  let stop = false;
  process.on('SIGTERM', () => {
    stop = true;
    console.log(`attacker's answers: ${JSON.stringify(statuses)}`);
    process.exit(0);
  });
  const send = async (body: unknown, headers: Record<string, string> = {}) => {
    const answer = await post(url, body, headers);
    statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
    if (Object.values(statuses).reduce((a, b) => a + b) === 1) console.log(`first attack answer: ${answer.status}, ${answer.text.length} characters`);
  };
  if (scenario === 'introspection') {
    const query = typeAliasesQuery(30);
    while (!stop) {
      void send({ query });
      await sleep(333);
    }
  } else if (scenario === 'bytes') {
    const records = Array.from({ length: 100 }, (_, i) => ({ itemId: 900_001 + i, name: `Long ${i}`, longDescription: 'é'.repeat(8000) }));
    await post(url, { query: 'mutation($items: [ItemInput!]!) { upsertItems(items: $items) { upserted } }', variables: { items: records } }, { authorization: admin });
    const query = `query($ids: [ItemId!]!) { ${Array.from({ length: 30 }, (_, i) => `a${i}: items(itemIds: $ids) { longDescription }`).join(' ')} }`;
    const ids = records.map((record) => record.itemId);
    await Promise.all([0, 1, 2].map(async () => {
      while (!stop) await send({ query, variables: { ids } }, { authorization: user });
    }));
  } else if (scenario === 'dense') {
    const fields = ['name', 'upc', 'msrp', 'salePrice', 'brandName', 'color', 'size', 'stock', 'age', 'gender', 'itemId', 'parentItemId', 'categoryPath', 'categoryNode', 'shortDescription', 'longDescription', 'thumbnailImage', 'mediumImage', 'largeImage', 'productUrl', 'modelNumber', 'sellerInfo', 'customerRating', 'numReviews', 'rhid', 'offerType', 'clearance', 'preOrder', 'bundle', 'marketplace'];
    const name = (i: number) => String.fromCharCode(65 + (i % 26)) + (i >= 26 ? String.fromCharCode(65 + Math.floor(i / 26)) : '');
    const text = (k: number) => {
      const fragments = Array.from({ length: 85 }, (_, i) => `fragment ${name(i)} on Item{${fields[i % 30]} ${fields[(i * 7 + 3) % 30]}}`);
      return `query Q${k}{item(itemId:${ITEM}){${fragments.map((_, i) => `...${name(i)}`).join(' ')}}} ${fragments.join(' ')}`;
    };
    for (let k = 0; !stop; k++) {
      void send({ query: text(k) }, { authorization: key });
      await sleep(1000 / 46);
    }
  }
}

if (mode === 'attacker') {
  const { URL: url = '', ADMIN = '', USER = '', KEY = '' } = process.env;
  await attack(url, ADMIN, USER, KEY);
} else {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'under-attack-'));
  const gateway = spawn(process.execPath, ['--no-memory-reducer', 'bin/recs-gateway.js', 'serve'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  gateway.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await new Promise<string>((resolve) => {
    createInterface({ input: gateway.stdout }).on('line', (line) => {
      const entry = (line.startsWith('{') ? JSON.parse(line) : {}) as { msg?: string; url?: string };
      if (entry.msg === 'recs-gateway ready' && entry.url) resolve(entry.url.replace(/\/graphql$/, ''));
    });
  });
  const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  const admin = basic('admin', /password\n\n\s+(\S+)/.exec(stderr)![1]!);
  const keyOf = async (authorization: string, name: string) =>
    (JSON.parse((await post(url, { query: 'mutation($n: String!) { createApiKey(input: { name: $n }) { key } }', variables: { n: name } }, { authorization })).text) as { data: { createApiKey: { key: string } } }).data.createApiKey.key;
  const valid = await keyOf(admin, 'valid');
  const other = await keyOf(admin, 'other');
  execFileSync(process.execPath, ['bin/recs-gateway.js', 'user', 'add', 'shopper', '--password', 'shopper-password'], { cwd: ROOT, env: { ...process.env, DATA_DIR: dataDir } });
  const shopper = await keyOf(basic('shopper', 'shopper-password'), 'shopper');

  const cached = { query: `{ item(itemId: ${ITEM}) { itemId name salePrice } }` };
  const cpuSeconds = () => {
    const fields = readFileSync(`/proc/${gateway.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  };
  const phase = async (label: string, seconds: number) => {
    const cpu = cpuSeconds();
    const times: number[] = [];
    const pending: Promise<void>[] = [];
    for (const end = Date.now() + seconds * 1000; Date.now() < end; await sleep(25)) {
      const started = performance.now();
      pending.push(post(url, cached, { authorization: valid }).then(() => void times.push(performance.now() - started)));
    }
    await Promise.all(pending);
    times.sort((a, b) => a - b);
    const at = (p: number) => times[Math.floor(times.length * p)]!.toFixed(1);
    console.log(`${label}: p50 ${at(0.5)} ms, p90 ${at(0.9)} ms (${times.length} requests); the gateway used ${((cpuSeconds() - cpu) / seconds).toFixed(2)} of a core`);
  };
  await post(url, cached, { authorization: valid });
  await phase('quiet', 5);
  const attacker = spawn(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname, '--attacker', scenario], {
    env: { ...process.env, URL: url, ADMIN: admin, USER: shopper, KEY: other },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  await sleep(1500);
  await phase(`under ${scenario}`, 8);
  attacker.kill('SIGTERM');
  gateway.kill('SIGTERM');
  await new Promise((resolve) => gateway.once('exit', resolve));
  rmSync(dataDir, { recursive: true, force: true });
}
