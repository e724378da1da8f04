import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { readManifest } from '../../src/config/manifest.js';
import { createLogger } from '../../src/logger.js';
import { main } from '../../src/main.js';
import { embeddedWithUsers, startTestGateway } from '../helpers/gateway.js';
import { scratchDirs, storeKinds } from '../helpers/stores.js';

const OPERATIONS = new URL('../../examples/client/operations/', import.meta.url).pathname;

/** Runs `recs-gateway …` in this process; resolves with its exit code and output. */
async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = new PassThrough().on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const err = new PassThrough().on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const stdin = new PassThrough();
  stdin.end('');
  const code = await main(argv, { stdout: out, stderr: err, stdin, env: { LOG_LEVEL: 'warn' } });
  return { code, stdout, stderr };
}

describe('recs-gateway manifest', () => {
  const dir = scratchDirs();

  it('writes the manifest TRUSTED_DOCUMENTS reads; the start names it in one log line, and its hashes run', async () => {
    const manifest = path.join(dir(), 'manifest.json');
    const made = await run(['manifest', OPERATIONS, '--output', manifest]);
    expect([made.code, made.stderr]).toEqual([0, '']);
    expect(made.stdout).toBe(`${manifest}: 2 operations (MyApiKeys, ProductPage); start with TRUSTED_DOCUMENTS=${manifest}\n`);
    // read by the reader the start uses: ids are the SHA-256 of the bodies, each body whole
    const operations = [...readManifest(manifest).values()];
    expect(operations.map((o) => o.name)).toEqual(['MyApiKeys', 'ProductPage']);
    const page = operations.find((o) => o.name === 'ProductPage')!;
    expect(page.id).toBe(createHash('sha256').update(page.body).digest('hex'));
    expect(page.body).toMatch(/^query ProductPage\(\$itemId: ItemId!\) \{[\s\S]*\n\nfragment ProductCard on Item \{/);

    let log = '';
    const destination = new PassThrough().on('data', (chunk: Buffer) => (log += chunk.toString()));
    const opened = await storeKinds[0]!.open();
    const gateway = await startTestGateway(
      await embeddedWithUsers(opened.store),
      { TRUSTED_DOCUMENTS: manifest, TRUSTED_DOCUMENTS_ONLY: 'true' },
      createLogger({ level: 'info', destination }),
    );
    try {
      const lines = log.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
      const loaded = lines.filter((line) => line.msg === 'trusted documents loaded');
      expect(loaded).toEqual([expect.objectContaining({ manifest, operations: 2, only: true })]);
      expect(log).not.toContain('ProductCard');

      const alice = { authorization: basicAuthorization('alice', 'alice-password') };
      const send = (body: unknown) =>
        fetch(`${gateway.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...alice }, body: JSON.stringify(body) });
      const byHash = await send({ variables: { itemId: 31000005 }, extensions: { persistedQuery: { version: 1, sha256Hash: page.id } } });
      const answered = (await byHash.json()) as { data?: { item: { itemId: number; boughtWith: { edges: unknown[] } } }; errors?: unknown };
      expect([byHash.status, answered.errors]).toEqual([200, undefined]);
      expect(answered.data!.item.itemId).toBe(31000005);
      expect(answered.data!.item.boughtWith.edges.length).toBeGreaterThan(0);
      const unlisted = await send({ query: '{ item(itemId: 31000005) { name } }' });
      expect(unlisted.status).toBe(400);
      expect(((await unlisted.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('PERSISTED_QUERY_NOT_IN_LIST');
    } finally {
      await gateway.stop();
      await opened.dispose();
    }
  });

  it('prints the manifest when no --output is given, and stops on a bad document with one line naming it', async () => {
    const printed = await run(['manifest', path.join(OPERATIONS, 'apiKeys.graphql')]);
    expect(printed.code).toBe(0);
    expect(JSON.parse(printed.stdout)).toMatchObject({ format: 'apollo-persisted-query-manifest', version: 1, operations: [{ name: 'MyApiKeys', type: 'query' }] });

    const docs = dir();
    const write = (name: string, text: string): string => {
      const folder = path.join(docs, name);
      mkdirSync(folder);
      writeFileSync(path.join(folder, 'op.graphql'), text);
      return folder;
    };
    const cases: [string, string, RegExp][] = [
      ['typo', 'query Page { item(itemId: 1) { nmae } }', /op\.graphql: query Page: Cannot query field "nmae" on type "Item"/],
      ['anonymous', '{ viewer { username } }', /op\.graphql: every operation needs a name/],
      ['fragment', 'query Card { item(itemId: 1) { ...Missing } }', /op\.graphql: query Card: fragment Missing is not defined in any of the files/],
      ['twice', 'query A { viewer { username } }\nquery A { viewer { domain } }', /op\.graphql: query A: another operation has this name/],
      ['syntax', 'query {', /op\.graphql: Syntax Error/],
      ['empty', '# nothing yet\n', /no operation in 1 file/],
    ];
    for (const [name, text, pattern] of cases) {
      const result = await run(['manifest', write(name, text)]);
      expect([result.code, result.stdout], name).toEqual([1, '']);
      expect(result.stderr, name).toMatch(/^recs-gateway: [^\n]+\n$/);
      expect(result.stderr, name).toMatch(pattern);
    }
    const missing = path.join(docs, 'nowhere');
    expect(await run(['manifest', missing])).toEqual({ code: 1, stdout: '', stderr: `recs-gateway: cannot read ${missing}: no such file or directory\n` });
    expect(await run(['manifest'])).toEqual({ code: 2, stdout: '', stderr: 'name the .graphql files or directories of the operations; see recs-gateway manifest --help\n' });
  });
});
