import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { composeSupergraph, recsSubgraphSdl, runCompose } from '../../../../scripts/compose.js';
import { runNode } from '../../../helpers/runNode.js';
import { scratchDirs } from '../../../helpers/stores.js';
import { PRODUCTS_SDL, useCountedGateway } from './helpers.js';

const PRODUCTS_URL = 'http://products:4001/graphql';
const RECS_URL = 'http://recs-gateway:4000/graphql';

/** Runs the script's command line in this process. */
function composing(argv: string[]): { code: number; stdout: string; stderr: string } {
  const result = { code: 0, stdout: '', stderr: '' };
  result.code = runCompose(argv, { stdout: { write: (text: string) => (result.stdout += text) }, stderr: { write: (text: string) => (result.stderr += text) } });
  return result;
}

describe('offline composition (npm run compose)', () => {
  const recs = useCountedGateway();
  const dir = scratchDirs();

  it('composes from the SDL the gateway serves, without asking a running gateway for it', async () => {
    const served = await recs.gw.gql<{ _service: { sdl: string } }>('{ _service { sdl } }');
    expect(recsSubgraphSdl()).toBe(served.body.data!._service.sdl);
    // the supergraph composed from the SDL over HTTP is the one supergraph.test.ts serves
    const products = { name: 'products', url: PRODUCTS_URL, sdl: PRODUCTS_SDL };
    const offline = composeSupergraph([{ name: 'recs', url: RECS_URL, sdl: recsSubgraphSdl() }, products]);
    const online = composeSupergraph([{ name: 'recs', url: RECS_URL, sdl: served.body.data!._service.sdl }, products]);
    expect('supergraphSdl' in offline).toBe(true);
    expect(offline).toEqual(online);
  });

  it('writes the supergraph of this gateway and a subgraph file from the command line, and names what does not compose', async () => {
    const files = dir();
    const productsFile = path.join(files, 'products.graphql');
    writeFileSync(productsFile, PRODUCTS_SDL);
    const output = path.join(files, 'supergraph.graphql');
    const made = await runNode(['--import', 'tsx', 'scripts/compose.ts', productsFile, '--routing-url', `products=${PRODUCTS_URL}`, '--recs-url', RECS_URL, '--output', output]);
    expect([made.code, made.stderr, made.stdout]).toEqual([0, '', `${output}: the supergraph of recs, products\n`]);
    const supergraph = readFileSync(output, 'utf8');
    expect(supergraph).toContain(`RECS @join__graph(name: "recs", url: "${RECS_URL}")`);
    expect(supergraph).toContain(`PRODUCTS @join__graph(name: "products", url: "${PRODUCTS_URL}")`);
    expect(supergraph).toMatch(/type Item\s+@join__type\(graph: PRODUCTS, key: "itemId", resolvable: false\)\s+@join__type\(graph: RECS, key: "itemId"\)/);

    // the README's warning: an itemId typed ID! elsewhere does not compose with ItemId! (in this process: the same code)
    const wrong = path.join(files, 'catalog.graphql');
    writeFileSync(wrong, PRODUCTS_SDL.replace('scalar ItemId\n', '').replaceAll('ItemId!', 'ID!'));
    const refused = composing([wrong, '--routing-url', 'catalog=http://catalog:4002/graphql']);
    expect(refused).toEqual({ code: 1, stdout: '', stderr: 'does not compose: Type of field "Item.itemId" is incompatible across subgraphs: it has type "ID!" in subgraph "catalog" but type "ItemId!" in subgraph "recs"\n' });
    expect(composing([productsFile])).toEqual({ code: 2, stdout: '', stderr: `${productsFile}: no routing URL for the subgraph products: add --routing-url products=<url>\n` });
  });
});
