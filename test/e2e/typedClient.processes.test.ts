import { describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { useEmbeddedGateway } from '../helpers/gateway.js';
import { runNode } from '../helpers/runNode.js';
import { storeKinds } from '../helpers/stores.js';

/**
 * examples/client, as a frontend team runs it: the script with its generated typed documents,
 * from source, against a real gateway over HTTP. (That it compiles is `npm run typecheck`; that
 * its documents match schema/ is `npm run codegen:check`.)
 */
const PHONE = 31000005;

/** The example script as a frontend developer runs it, with only what its environment gives it. */
const runExample = (env: Record<string, string>) => runNode(['--import', 'tsx', 'examples/client/src/productPage.ts'], { env, cleanEnv: true });

describe('examples/client against a gateway on the embedded backend', () => {
  const gw = useEmbeddedGateway(storeKinds.find((kind) => kind.name === 'sqlite')!);

  it('prints the product page (item, variants, recommendations and theirs) and the key list, with real data', async () => {
    const created = await gw.gql<{ createApiKey: { key: string } }>(
      'mutation { createApiKey(input: { name: "storefront" }) { key } }',
      {},
      { authorization: basicAuthorization('alice', 'alice-password') },
    );
    const key = created.body.data!.createApiKey.key;
    // what the page should show, asked independently over the REST interface
    const rest = async (path: string) => (await fetch(`${gw.url}${path}&apiKey=${encodeURIComponent(key)}`)).json() as Promise<{ itemId: number; name: string; variants?: number[] }[]>;
    const boughtWith = (await rest(`/v1/nbp?itemId=${PHONE}`)).slice(0, 4);
    const viewedWith = (await rest(`/v1/postbrowse?itemId=${PHONE}`)).slice(0, 4);

    const run = await runExample({ GATEWAY_URL: gw.url, API_KEY: key, ITEM_ID: String(PHONE) });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const out = run.stdout.trimEnd();
    expect(out).toContain('signed in as alice by API_KEY');
    expect(out).toMatch(/^keys: storefront \(last used /m);
    expect(out).toMatch(new RegExp(`^product: Bramwick Deluxe Smartphone 100, Slate \\(${PHONE}\\), Bramwick: \\$\\d+\\.\\d\\d`, 'm'));
    expect(out).toMatch(/^ {2}variant \d+: /m);
    const section = (title: string) => out.split(`${title}:\n`)[1]!.split('\n\n')[0]!.split('\n');
    const bought = section('bought with it');
    // ranked as the REST interface ranks them, each with its variants
    const ranked = bought.flatMap((line, i) => {
      if (!/^ {2}\d\. /.test(line)) return [];
      const next = bought[i + 1] ?? '';
      const variants = next.startsWith('     variants: ') ? next.slice('     variants: '.length).split(', ').map(Number) : [];
      return [{ name: line.replace(/^ {2}\d\. /, '').split(' (')[0], variants }];
    });
    // (a record's variants list the item itself too; variantItems the others)
    expect(ranked).toEqual(boughtWith.map((item) => ({ name: item.name, variants: (item.variants ?? []).filter((id) => id !== item.itemId) })));
    expect(ranked.some((item) => item.variants.length > 0)).toBe(true);
    expect(section('viewed with it').map((line) => line.replace(/^ {2}- /, '').split(' (')[0])).toEqual(viewedWith.map((item) => item.name));
  });

  it('fails with the gateway\'s error code for a bad key, and asks for a key when there is none', async () => {
    const refused = await runExample({ GATEWAY_URL: gw.url, API_KEY: 'AAECAwQFBgcICQoLDA0ODw' });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/HTTP 401, UNAUTHENTICATED/);
    const none = await runExample({ GATEWAY_URL: gw.url });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/Set API_KEY/);
  });
});
