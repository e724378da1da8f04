import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'graphql';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { DEFAULT_LIMITS } from '../../src/config/defaults.js';
import { measureOperations } from '../../src/graphql/pipeline/limits.js';
import { createKey, gql, runCli, startServe, type ServeProcess } from '../helpers/processes.js';
import { tempDir } from '../helpers/stores.js';

/**
 * One signed-in caller, within the gateway's default rate limits, must not make the gateway slow
 * for everyone: a publishable key sending lists whose filters are new each time (30 aliases, each a
 * narrow price range never asked before) walks the catalogue once per filter, and a few of those
 * requests at once would hold the event loop for seconds. The cost limit charges a filtered list its
 * first walk, so dozens of aliases are refused; as many as it allows, or a stream of REST lookups
 * each with a new filter at the key's rate, must not stall anyone either.
 */
const ALIASES = 30;
const ATTACKERS = 8;
const ATTACK_MS = 5_000;
const mallory = basicAuthorization('mallory', 'mallory-password');
const carol = basicAuthorization('carol', 'carol-password');

const freshPrice = (): { minPrice: number; maxPrice: number } => {
  const low = 100 + Math.random() * 100_000;
  return { minPrice: low, maxPrice: low + 0.01 };
};

function freshFilters(aliases = ALIASES): { query: string; variables: Record<string, unknown> } {
  const defs: string[] = [];
  const fields: string[] = [];
  const variables: Record<string, unknown> = {};
  for (let i = 0; i < aliases; i++) {
    defs.push(`$f${i}: RecommendationFilter`);
    fields.push(`a${i}: recommendedForYou(sessionId: "s-1", first: 1, filter: $f${i}) { edges { node { itemId } } }`);
    variables[`f${i}`] = freshPrice();
  }
  return { query: `query(${defs.join(', ')}) { ${fields.join(' ')} }`, variables };
}

describe('a caller sending fresh filters, and everyone else', () => {
  const dir = tempDir();
  // the gateway's own default limits, as a deployment has them
  const env = { DATA_DIR: dir.dir, RATE_LIMIT_RPS: '50', NEW_DOCUMENTS_RPS: '5', AUTH_FAILURES_PER_MINUTE: '10' };
  let gw: ServeProcess;
  let attackerKey: string;
  let bystanderKey: string;

  beforeAll(async () => {
    expect((await runCli(['user', 'add', 'mallory', '--password', 'mallory-password'], env)).code).toBe(0);
    expect((await runCli(['user', 'add', 'carol', '--password', 'carol-password'], env)).code).toBe(0);
    gw = await startServe(env);
    const made = await gql(gw.url, 'mutation { createApiKey(input: { name: "shop-app", scopes: [RECOMMENDATIONS_READ] }) { key } }', {}, { authorization: mallory });
    attackerKey = (made.body.data!.createApiKey as { key: string }).key;
    bystanderKey = await createKey(gw.url, carol, 'carols-laptop');
  }, 120_000);
  afterAll(async () => {
    await gw?.stop();
    dir.remove();
  });

  /** The bystander's median wait while ATTACKERS loops each send `attack` until ATTACK_MS pass. */
  async function bystanderWhile(attack: () => Promise<void>): Promise<void> {
    const until = Date.now() + ATTACK_MS;
    let attacks = 0;
    const attacker = async (): Promise<void> => {
      while (Date.now() < until) {
        await attack();
        attacks += 1;
      }
    };
    const bystander = async (): Promise<number[]> => {
      const waits: number[] = [];
      await new Promise((resolve) => setTimeout(resolve, 500));
      while (Date.now() < until) {
        const started = performance.now();
        const answer = await gql(gw.url, '{ item(itemId: 31000005) { name } }', {}, { authorization: bystanderKey });
        expect(answer.status).toBe(200);
        waits.push(performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      return waits;
    };
    const [waits] = await Promise.all([bystander(), ...Array.from({ length: ATTACKERS }, attacker)]);
    waits.sort((a, b) => a - b);
    const median = waits[Math.floor(waits.length / 2)]!;
    expect(attacks).toBeGreaterThan(0);
    expect(median, `bystander's median wait over ${waits.length} lookups, ${attacks} attacking requests`).toBeLessThan(250);
  }

  it('answers another user\'s item lookup within a quarter of a second while a publishable key sends them', async () => {
    await bystanderWhile(async () => {
      const { query, variables } = freshFilters();
      const answer = await gql(gw.url, query, variables, { authorization: attackerKey });
      expect(answer.status).not.toBe(500);
      // refused for its cost, or past the rate limit
      expect(['QUERY_TOO_COMPLEX', 'RATE_LIMITED']).toContain(answer.body.errors?.[0]?.extensions?.code);
    });
  }, 60_000);

  it('does so too with as many fresh filtered lists a request as the cost limit lets through', async () => {
    let most = 1;
    const costOf = (n: number): number => measureOperations(parse(freshFilters(n).query))[0]!.measure.cost;
    while (costOf(most + 1) <= DEFAULT_LIMITS.maxCost) most += 1;
    expect(most).toBeGreaterThanOrEqual(3);
    expect(most).toBeLessThan(ALIASES);
    await bystanderWhile(async () => {
      const { query, variables } = freshFilters(most);
      const answer = await gql(gw.url, query, variables, { authorization: attackerKey });
      expect(answer.status).not.toBe(500);
      // past the rate limit a request is refused; one let through answers every list
      if (answer.body.errors === undefined) expect(Object.keys(answer.body.data!)).toHaveLength(most);
    });
  }, 60_000);

  it('does so too while the key sends REST lookups, each with a fresh filter, at its allowed rate', async () => {
    const key = encodeURIComponent(attackerKey);
    const gap = (ATTACKERS * 1000) / Number(env.RATE_LIMIT_RPS);
    const paths = [`/v1/foryou?sessionId=s-1&count=1`, `/v1/nbp?itemId=31000005`, `/v1/postbrowse?itemId=31000005`];
    let n = 0;
    await bystanderWhile(async () => {
      const started = Date.now();
      const { minPrice, maxPrice } = freshPrice();
      const response = await fetch(`${gw.url}${paths[n++ % paths.length]}&apiKey=${key}&minPrice=${minPrice}&maxPrice=${maxPrice}`);
      expect(response.status).not.toBe(500);
      await response.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, gap - (Date.now() - started))));
    });
  }, 60_000);
});
