import { afterAll, beforeAll } from 'vitest';
import { basicAuthorization } from '../../../../src/auth/authorization.js';
import type { Backend } from '../../../../src/ports/backend.js';
import { embeddedWithUsers, startTestGateway, type TestGateway } from '../../../helpers/gateway.js';
import { storeKinds } from '../../../helpers/stores.js';

/** A smartphone of the demo shop, two of the items viewed with it, and an id the shop lacks. */
export const PHONE = 31000005;
export const OTHERS = [31000028, 31000019] as const;
export const UNKNOWN = 5000000001;

/** A second subgraph of the test's own: products that know the Walmart item id of what they sell. */
export const PRODUCTS_SDL = `
extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])

scalar ItemId

type Product @key(fields: "id") {
  id: ID!
  title: String!
  walmartItemId: ItemId!
  "The item, from the recs subgraph."
  item: Item
}

type Item @key(fields: "itemId", resolvable: false) {
  itemId: ItemId!
}

type Query {
  products: [Product!]!
}
`;

export interface CountedGateway {
  gw: TestGateway;
  /** An API key of alice's. */
  key: string;
  /** The ids of every getItems call the backend got, in order. */
  getItemsCalls: number[][];
}

/**
 * For a describe block: a gateway over the embedded backend (SQLite store, demo shop) whose
 * getItems calls are recorded, and an API key for it.
 */
export function useCountedGateway(env: Record<string, string> = {}): CountedGateway {
  const counted = { key: '', getItemsCalls: [] as number[][] } as CountedGateway;
  let dispose: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const opened = await storeKinds[0]!.open();
    dispose = opened.dispose;
    const backend: Backend = await embeddedWithUsers(opened.store);
    const getItems = backend.recs.getItems.bind(backend.recs);
    backend.recs.getItems = (ids, options) => {
      counted.getItemsCalls.push([...ids]);
      return getItems(ids, options);
    };
    counted.gw = await startTestGateway(backend, env);
    const created = await counted.gw.gql<{ createApiKey: { key: string } }>(
      'mutation { createApiKey(input: {}) { key } }',
      {},
      { authorization: basicAuthorization('alice', 'alice-password') },
    );
    counted.key = created.body.data!.createApiKey.key;
  });
  afterAll(async () => {
    await counted.gw?.stop().catch(() => undefined);
    await dispose?.();
  });
  return counted;
}
