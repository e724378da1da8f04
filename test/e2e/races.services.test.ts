import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';
import { report } from '../helpers/harness.js';

const CREATE = 'mutation { createApiKey(input: {}) { id key apiKey { name } } }';
const DELETE = 'mutation($id: ID!) { deleteApiKey(id: $id) { ok } }';
const LIST = '{ apiKeys { id name } }';

interface Created { createApiKey: { id: string; key: string; apiKey: { name: string } } }

const numberOf = (name: string): number => Number(/^key#(\d+)$/.exec(name)?.[1] ?? 0);

type Op =
  | { kind: 'create'; id: string; name: string }
  | { kind: 'delete'; id: string; ok: boolean };

/**
 * Whether some serial order of `ops` from `initial` gives every observed result and ends in
 * `final`. The state after a set of operations does not depend on their order, so a search over
 * subsets (2^n) decides it.
 */
function serialisable(initial: Map<string, string>, ops: Op[], final: Map<string, string>): boolean {
  const stateOf = (mask: number): Map<string, string> => {
    const state = new Map(initial);
    ops.forEach((op, i) => {
      if (!(mask & (1 << i))) return;
      if (op.kind === 'create') state.set(op.id, op.name);
      else if (op.ok) state.delete(op.id);
    });
    return state;
  };
  const seen = new Set<number>();
  const search = (mask: number): boolean => {
    if (mask === (1 << ops.length) - 1) {
      const state = stateOf(mask);
      return state.size === final.size && [...final].every(([id, name]) => state.get(id) === name);
    }
    if (seen.has(mask)) return false;
    seen.add(mask);
    const state = stateOf(mask);
    const highest = Math.max(0, ...[...state.values()].map(numberOf));
    return ops.some((op, i) => {
      if (mask & (1 << i)) return false;
      const possible = op.kind === 'create' ? numberOf(op.name) === highest + 1 : state.has(op.id) === op.ok;
      return possible && search(mask | (1 << i));
    });
  };
  return search(0);
}

it('the serial-order check refuses what no order gives', () => {
  const initial = new Map([['a', 'key#1'], ['b', 'key#2']]);
  const create = (id: string, name: string): Op => ({ kind: 'create', id, name });
  // key#2 is taken and nothing deleted it
  expect(serialisable(initial, [create('c', 'key#2')], new Map([...initial, ['c', 'key#2']]))).toBe(false);
  // a final state that misses a key nobody deleted
  expect(serialisable(initial, [create('c', 'key#3')], new Map([['a', 'key#1'], ['c', 'key#3']]))).toBe(false);
  expect(serialisable(initial, [{ kind: 'delete', id: 'b', ok: true }, create('c', 'key#2'), create('d', 'key#3')],
    new Map([['a', 'key#1'], ['c', 'key#2'], ['d', 'key#3']]))).toBe(true);
  expect(serialisable(initial, [create('c', 'key#3'), create('d', 'key#3')], new Map([...initial, ['c', 'key#3'], ['d', 'key#3']]))).toBe(false);
  expect(serialisable(initial, [{ kind: 'delete', id: 'b', ok: true }, { kind: 'delete', id: 'b', ok: true }], new Map([['a', 'key#1']]))).toBe(false);
});

describe.each(storeKinds)('concurrent key operations, $name store', (kind) => {
  let gw: TestGateway;
  let dispose: () => Promise<void>;
  let auth: Record<string, string>;

  beforeAll(async () => {
    const opened = await kind.open();
    dispose = opened.dispose;
    // the rounds make about 130 keys for alice: past the default cap of 100 keys a user
    gw = await startTestGateway(await embeddedWithUsers(opened.store, { maxKeysPerUser: 1_000 }));
    const first = await gw.gql<Created>(CREATE, {}, { authorization: basicAuthorization('alice', 'alice-password') });
    // the rest of the test authenticates with this key (key#1), which is never deleted
    auth = { authorization: first.body.data!.createApiKey.key };
  });
  afterAll(async () => {
    await gw.stop().catch(() => undefined);
    await dispose();
  });

  const list = async (): Promise<Map<string, string>> => {
    const listed = await gw.gql<{ apiKeys: { id: string; name: string }[] }>(LIST, {}, auth);
    return new Map(listed.body.data!.apiKeys.map((k) => [k.id, k.name]));
  };

  it('50 parallel creates for one user give 50 keys with distinct key#<n> names', async () => {
    const before = await list();
    const answers = await Promise.all(Array.from({ length: 50 }, () => gw.gql<Created>(CREATE, {}, auth)));
    for (const answer of answers) expect(answer.body.errors).toBeUndefined();
    const names = answers.map((a) => a.body.data!.createApiKey.apiKey.name);
    expect(new Set(names).size).toBe(50);
    const highest = Math.max(...[...before.values()].map(numberOf));
    expect(names.map(numberOf).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => highest + 1 + i));
    const after = await list();
    expect(after.size).toBe(before.size + 50);
    for (const answer of answers) expect(after.get(answer.body.data!.createApiKey.id)).toBe(answer.body.data!.createApiKey.apiKey.name);
    // the new keys work
    const viewer = await gw.gql<{ viewer: { username: string } }>('{ viewer { username } }', {}, { authorization: answers[7]!.body.data!.createApiKey.key });
    expect(viewer.body.data?.viewer.username).toBe('alice');
  });

  it('create/delete races end in a state that some serial order gives (20 rounds)', async () => {
    let ops = 0;
    for (let round = 0; round < 20; round++) {
      // keys to race over: the highest ones, so deleting them moves the next default name
      const targets: string[] = [];
      for (let i = 0; i < 3; i++) targets.push((await gw.gql<Created>(CREATE, {}, auth)).body.data!.createApiKey.id);
      const initial = await list();
      const work: Promise<Op>[] = [
        ...Array.from({ length: 4 }, async (): Promise<Op> => {
          const answer = await gw.gql<Created>(CREATE, {}, auth);
          expect(answer.body.errors).toBeUndefined();
          const { id, apiKey } = answer.body.data!.createApiKey;
          return { kind: 'create', id, name: apiKey.name };
        }),
        // every target deleted twice: exactly one of the two may succeed
        ...[...targets, ...targets].map(async (id): Promise<Op> => {
          const answer = await gw.gql<{ deleteApiKey: { ok: boolean } }>(DELETE, { id }, auth);
          const code = answer.body.errors?.[0]?.extensions?.code;
          if (code !== undefined) expect(code).toBe('NOT_FOUND');
          return { kind: 'delete', id, ok: answer.body.data?.deleteApiKey?.ok === true };
        }),
      ];
      const observed = await Promise.all(work);
      ops += observed.length;
      const final = await list();
      for (const id of targets) expect(observed.filter((o) => o.kind === 'delete' && o.id === id && o.ok)).toHaveLength(1);
      expect(new Set(final.values()).size).toBe(final.size);
      expect(serialisable(initial, observed, final), JSON.stringify({ initial: [...initial], observed, final: [...final] })).toBe(true);
    }
    report(`create/delete races, ${kind.name}`, { rounds: 20, operations: ops, serialisable: 'all' });
  });
});
