import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { afterEach, beforeEach, expect } from 'vitest';
import { createRestBackend } from '../../src/backends/rest/index.js';
import type { RestBackend } from '../../src/backends/rest/index.js';
import { badUserInput, forbidden, GatewayError, notFound, unauthenticated } from '../../src/errors.js';
import { parseAuthorization } from '../../src/auth/authorization.js';
import type {
  ApiKeyModel, ApiKeyUsageModel, CreateApiKeyInput, CreatedApiKeyModel, ItemModel, KeyService, PrincipalModel,
  RecommendationKind, RecommendationListModel, RecsService, UserRef,
} from '../../src/ports/backend.js';
import { serveApiKeys, serveRecommendations } from '../../src/rest/index.js';
import type { RestRequest } from '../../src/rest/index.js';
import { promised } from '../../src/shared/promised.js';


export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface TestServer {
  url: string;
  port: number;
  /** Every request received, in arrival order (recorded as its head arrives). */
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export type Handler = (req: RecordedRequest, res: ServerResponse) => void | Promise<void>;

/**
 * A loopback HTTP server whose handler may misbehave at will; a handler that never answers
 * blackholes the request. close() ends every connection, answered or not.
 */
export async function startServer(handler: Handler): Promise<TestServer> {
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    // Recorded on arrival: a client that gives up early may close before the body's end.
    const recorded: RecordedRequest = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: '' };
    requests.push(recorded);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      recorded.body = Buffer.concat(chunks).toString('utf8');
      Promise.resolve(handler(recorded, res)).catch((error: unknown) => {
        res.statusCode = 500;
        res.end(String(error));
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(value));
}

export function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain' });
  res.end(text);
}

/** The production mounting is the lead's; this is the least a test needs to reach the handlers. */
export function mountRest(keys: KeyService, recs: RecsService): Promise<TestServer> {
  return startServer(async (recorded, res) => {
    const url = new URL(recorded.url, 'http://localhost');
    let body: unknown;
    if (recorded.body !== '') {
      try {
        body = JSON.parse(recorded.body) as unknown;
      } catch {
        body = undefined;
      }
    }
    const req: RestRequest = { method: recorded.method, path: url.pathname, query: url.searchParams, headers: recorded.headers, body };
    const answer = serveApiKeys(req, keys) ?? serveRecommendations(req, keys, recs);
    if (answer === null) return sendJson(res, 404, { message: 'not found' });
    const response = await answer;
    res.writeHead(response.status, response.headers);
    res.end(response.body);
  });
}

// ---------------------------------------------------------------------------------------------
// In-memory fakes of the two services, standing in for the embedded backend being written.

interface FakeUser {
  id: string;
  username: string;
  domain: string | null;
  password: string;
  isAdmin: boolean;
}

interface FakeKey extends ApiKeyModel {
  key: string;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const NAME = /^[0-9a-zA-Z][0-9a-zA-Z_@.\-~]{2,127}$/;

export class FakeKeyService implements KeyService {
  readonly users: FakeUser[] = [
    { id: randomUUID(), username: 'alice', domain: null, password: 'alice-pw', isAdmin: false },
    { id: randomUUID(), username: 'bob', domain: 'corp', password: 'bob-pw', isAdmin: false },
    { id: randomUUID(), username: 'root', domain: null, password: 'root-pw', isAdmin: true },
  ];
  readonly keys: FakeKey[] = [];
  authenticateCalls = 0;

  authenticate(authorization: string): Promise<PrincipalModel> {
    return promised(() => {
      this.authenticateCalls++;
      const credential = parseAuthorization(authorization);
      if (credential === null) throw unauthenticated();
      const base = { credentialId: sha256(authorization), authorization };
      if (credential.kind === 'password') {
        const decoded = Buffer.from(authorization.trim().split(/ +/)[1] ?? '', 'base64').toString('utf8');
        const password = decoded.slice(decoded.indexOf(':') + 1);
        const user = this.users.find((u) => u.username === credential.username && u.domain === credential.domain);
        if (!user || user.password !== password) throw unauthenticated();
        return { ...base, user: this.model(user), authenticatedBy: 'PASSWORD', keyId: null };
      }
      const value = authorization.trim().replace(/^bearer +/i, '');
      const key = this.keys.find((k) => k.key === value);
      const user = key && this.users.find((u) => u.id === key.userId);
      if (!key || !user) throw unauthenticated();
      return { ...base, user: this.model(user), authenticatedBy: 'API_KEY', keyId: key.id };
    });
  }

  listKeys(principal: PrincipalModel, of?: UserRef | null): Promise<ApiKeyModel[]> {
    return promised(() => {
      if (of) throw forbidden();
      return this.keys
        .filter((k) => k.userId === principal.user.id)
        .map(({ key: _key, ...model }) => model)
        .sort((a, b) => (a.name < b.name ? -1 : 1));
    });
  }

  createKey(principal: PrincipalModel, input: CreateApiKeyInput): Promise<CreatedApiKeyModel> {
    return promised(() => {
      let owner = this.users.find((u) => u.id === principal.user.id);
      if (input.username != null && input.username !== principal.user.username) {
        if (!principal.user.isAdmin) throw forbidden();
        owner = this.users.find((u) => u.username === input.username && u.domain === (input.userDomain ?? null));
        if (!owner) throw badUserInput(`Unknown user: ${input.username}`, 'username');
      }
      if (!owner) throw unauthenticated();
      const mine = this.keys.filter((k) => k.userId === owner.id);
      let name = input.name;
      if (name == null) {
        const highest = Math.max(0, ...mine.map((k) => /^key#(\d+)$/.exec(k.name)).map((m) => (m ? Number(m[1]) : 0)));
        name = `key#${highest + 1}`;
      } else if (!NAME.test(name)) {
        throw badUserInput('Invalid name: 3 to 128 letters, digits or _@.-~, starting with a letter or digit', 'name');
      }
      if (mine.some((k) => k.name === name)) throw badUserInput(`Duplicate name: ${name}`, 'name');
      const key: FakeKey = {
        id: randomUUID(), userId: owner.id, name, key: randomBytes(16).toString('base64').replace(/=+$/, ''),
        createdAt: new Date('2024-01-02T03:04:05.000Z'), expiresAt: null, lastUsedAt: null, scopes: input.scopes ?? ['RECOMMENDATIONS_READ', 'EVENTS_WRITE', 'KEYS_MANAGE'],
        rateLimitPerSecond: input.rateLimitPerSecond ?? null, dailyQuota: input.dailyQuota ?? null,
      };
      this.keys.push(key);
      const { key: value, ...apiKey } = key;
      return { ok: true, id: key.id, key: value, apiKey };
    });
  }

  deleteKey(principal: PrincipalModel, id: string): Promise<void> {
    return promised(() => {
      const index = this.keys.findIndex((k) => k.id === id && (k.userId === principal.user.id || principal.user.isAdmin));
      if (index === -1) throw notFound(`API key not found: ${id}`);
      this.keys.splice(index, 1);
    });
  }

  rotateKey(): Promise<CreatedApiKeyModel> {
    return Promise.reject(new Error('the fake does not rotate keys'));
  }

  updateKey(): Promise<ApiKeyModel> {
    return Promise.reject(new Error('the fake does not update keys'));
  }

  keyUsage(): Promise<ApiKeyUsageModel[]> {
    return Promise.reject(new Error('the fake counts no usage'));
  }

  basic(username: string): string {
    const user = this.users.find((u) => u.username === username);
    if (!user) throw new Error(`no user ${username}`);
    const name = user.domain ? `${user.username}@${user.domain}` : user.username;
    return `Basic ${Buffer.from(`${name}:${user.password}`).toString('base64')}`;
  }

  private model(user: FakeUser): PrincipalModel['user'] {
    return { id: user.id, username: user.username, domain: user.domain, isAdmin: user.isAdmin };
  }
}

/** A record with the upstream's loose shape: customerRating as text, some fields absent. */
export function itemRecord(itemId: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    itemId,
    parentItemId: itemId,
    name: `Item ${itemId}`,
    salePrice: itemId % 2 === 0 ? itemId : itemId + 0.99,
    upc: `00${itemId}`.padStart(12, '0'),
    ...(itemId % 3 === 0 ? { customerRating: '4.627', msrp: 100 } : {}),
    attributes: { color: 'red' },
    ...extra,
  };
}

export class FakeRecsService implements RecsService {
  /** Items 1..40. Anchor 1 has 12 candidates (2..13), anchor 20 none, anchor 21 one. */
  readonly items = new Map<number, ItemModel>();
  getItemsCalls: number[][] = [];

  constructor(parse: (raw: unknown) => ItemModel) {
    for (let id = 1; id <= 40; id++) this.items.set(id, parse(itemRecord(id)));
  }

  getItems(ids: readonly number[]): Promise<(ItemModel | null)[]> {
    return promised(() => {
      this.getItemsCalls.push([...ids]);
      return ids.map((id) => this.items.get(id) ?? null);
    });
  }

  recommend(kind: RecommendationKind, anchorId: number): Promise<RecommendationListModel> {
    return promised(() => {
      if (!this.items.has(anchorId)) throw notFound(`Item ${anchorId} not found`);
      const candidates = anchorId === 1 ? Array.from({ length: 12 }, (_, i) => i + 2) : anchorId === 21 ? [22] : [];
      const ordered = kind === 'POST_BROWSE' ? candidates : [...candidates].reverse();
      return {
        anchorId,
        kind,
        entries: ordered.slice(0, 10).map((itemId, i) => ({ rank: i + 1, itemId, score: 1 / (i + 1), evidence: 5, source: 'CO_VIEW' })),
      };
    });
  }
}

/** The GatewayError a promise rejects with (failing the test when it resolves or rejects with anything else). */
export async function failure(promise: Promise<unknown>): Promise<GatewayError> {
  const error = await promise.then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(GatewayError);
  return error as GatewayError;
}

/** A REST-mode backend over a fake recommendations upstream, made afresh for each test of the file; the
 * upstream answers with `answer`, set by each test. */
export function useFakeRecsUpstream(recsApiKey = 'gateway+key/=='): {
  answer: (req: RecordedRequest, res: ServerResponse) => void;
  upstream: TestServer;
  backend: RestBackend;
  /** The URL of the upstream's i-th request. */
  asked(i?: number): URL;
} {
  const fake = {
    answer: (_req: RecordedRequest, _res: ServerResponse): void => undefined,
    upstream: undefined as unknown as TestServer,
    backend: undefined as unknown as RestBackend,
    asked: (i = 0): URL => new URL(fake.upstream.requests[i]?.url ?? '', 'http://x'),
  };
  beforeEach(async () => {
    fake.upstream = await startServer((req, res) => fake.answer(req, res));
    fake.backend = createRestBackend({
      apiKeyServiceUrl: 'http://127.0.0.1:9', recsServiceUrl: fake.upstream.url, recsApiKey, retryBaseDelayMs: 1, retryMaxDelayMs: 5,
    });
  });
  afterEach(async () => {
    await fake.backend.close();
    await fake.upstream.close();
  });
  return fake;
}
