import { afterAll, beforeAll } from 'vitest';
import { createEmbeddedBackend } from '../../src/backends/embedded/index.js';
import type { EmbeddedKeyServiceOptions } from '../../src/backends/embedded/keys/keyService.js';
import type { KeyStore } from '../../src/backends/embedded/keys/store.js';
import { openEmbeddedRecs } from '../../src/backends/embedded/openRecs.js';
import { addUser } from '../../src/backends/embedded/keys/users.js';
import { withIngestInMemory } from './memoryIngest.js';
import type { Backend } from '../../src/ports/backend.js';
import { loadConfig } from '../../src/config/env.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import type { Logger } from '../../src/logger.js';
import { NO_RATE_LIMITS } from './processes.js';
import { TEST_COST, type StoreKind } from './stores.js';

export interface GraphQLResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: { data?: T | null; errors?: { message: string; path?: (string | number)[]; extensions?: Record<string, unknown> }[] };
}

export interface TestGateway {
  url: string;
  gateway: Gateway;
  /** POSTs a GraphQL operation over real HTTP. */
  gql: <T = Record<string, unknown>>(
    query: string,
    variables?: Record<string, unknown>,
    headers?: Record<string, string>,
  ) => Promise<GraphQLResponse<T>>;
  stop: () => Promise<void>;
}

/** A gateway on a free loopback port over the given backend (the gateway closes it on stop); its log silent unless given. */
export async function startTestGateway(backend: Backend, env: Record<string, string> = {}, log?: Logger): Promise<TestGateway> {
  const config = loadConfig({ DATA_DIR: '/nonexistent', ...NO_RATE_LIMITS, ...env });
  const gateway = await createGateway({ config, backend, ...(log ? { log } : {}) });
  const url = await gateway.listen(0, '127.0.0.1');
  return { url, gateway, gql: graphqlClient(url), stop: () => gateway.stop() };
}

/** POSTs GraphQL operations to the gateway at `url` over real HTTP. */
export function graphqlClient(url: string): TestGateway['gql'] {
  return async (query, variables, headers = {}) => {
    const response = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ query, variables }),
    });
    return { status: response.status, headers: response.headers, body: (await response.json()) as GraphQLResponse<never>['body'] };
  };
}

/**
 * The embedded backend over `store` and the demo shop, with users alice, bob@corp.example and the
 * administrator root.
 */
export async function embeddedWithUsers(store: KeyStore, keyOptions: EmbeddedKeyServiceOptions = {}): Promise<Backend> {
  await addUser(store, { username: 'alice', password: 'alice-password' }, TEST_COST);
  await addUser(store, { username: 'bob', domain: 'corp.example', password: 'bob-password' }, TEST_COST);
  await addUser(store, { username: 'root', password: 'root-password', isAdmin: true }, TEST_COST);
  const recs = await openEmbeddedRecs({ dataDir: null });
  return withIngestInMemory(createEmbeddedBackend(store, recs, keyOptions), recs);
}

/**
 * For a describe block: a gateway over the embedded backend (demo shop; users alice,
 * bob@corp.example and the administrator root) on a fresh store of `kind`, started before the
 * block's tests and stopped after them. The object returned stands for that gateway.
 */
export function useEmbeddedGateway(kind: StoreKind): TestGateway {
  let current: TestGateway | undefined;
  let dispose: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const opened = await kind.open();
    dispose = opened.dispose;
    current = await startTestGateway(await embeddedWithUsers(opened.store));
  });
  afterAll(async () => {
    await current?.stop().catch(() => undefined);
    await dispose?.();
  });
  const started = (): TestGateway => {
    if (!current) throw new Error('the gateway starts in beforeAll');
    return current;
  };
  return {
    get url() {
      return started().url;
    },
    get gateway() {
      return started().gateway;
    },
    gql: (query, variables, headers) => started().gql(query, variables, headers),
    stop: () => started().stop(),
  };
}

/** The first error's code, for narrowing in tests. */
export const codeOf = (response: GraphQLResponse): unknown => response.body.errors?.[0]?.extensions?.code;
