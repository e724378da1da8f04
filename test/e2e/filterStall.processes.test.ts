import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { createKey, gql, runCli, startServe, type ServeProcess } from '../helpers/processes.js';
import { tempDir } from '../helpers/stores.js';

/**
 * One signed-in caller, within the gateway's default rate limits, must not make the gateway slow
 * for everyone: a publishable key sending lists whose filters are new each time (30 aliases, each a
 * narrow price range never asked before) walks the catalogue once per filter, and a few of those
 * requests at once hold the event loop for seconds, while the cost limit counts them as cheap.
 */
const ALIASES = 30;
const ATTACKERS = 8;
const ATTACK_MS = 5_000;
const mallory = basicAuthorization('mallory', 'mallory-password');
const carol = basicAuthorization('carol', 'carol-password');

function freshFilters(): { query: string; variables: Record<string, unknown> } {
  const defs: string[] = [];
  const fields: string[] = [];
  const variables: Record<string, unknown> = {};
  for (let i = 0; i < ALIASES; i++) {
    const low = 100 + Math.random() * 100_000;
    defs.push(`$f${i}: RecommendationFilter`);
    fields.push(`a${i}: recommendedForYou(sessionId: "s-1", first: 1, filter: $f${i}) { edges { node { itemId } } }`);
    variables[`f${i}`] = { minPrice: low, maxPrice: low + 0.01 };
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

  it('answers another user\'s item lookup within a quarter of a second while a publishable key sends them', async () => {
    const until = Date.now() + ATTACK_MS;
    let attacks = 0;
    const attacker = async (): Promise<void> => {
      while (Date.now() < until) {
        const { query, variables } = freshFilters();
        const answer = await gql(gw.url, query, variables, { authorization: attackerKey });
        expect(answer.status).not.toBe(500);
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
  }, 60_000);
});
