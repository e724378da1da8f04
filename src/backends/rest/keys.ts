import { connectionCredentialId, credentialId as credentialIdOf, parseAuthorization, withAuthorization, type Credential } from '../../auth/authorization.js';
import {
  badUserInput, ErrorCode, forbidden, GatewayError, notFound, pastDeadline, quotaExceeded, rateLimited, unauthenticated, upstreamRejected, upstreamUnavailable,
} from '../../errors.js';
import {
  KEY_SERVICE, type ApiKeyModel, type ApiKeyScope, type ApiKeyUsageModel, type CallOptions, type CreateApiKeyInput, type CreatedApiKeyModel, type KeyService, type PrincipalModel,
  type UpdateApiKeyInput, type UserRef,
} from '../../ports/backend.js';
import { API_KEY_SCOPES, scopeRefusal } from '../../model/scopes.js';
import { MemoryCache } from '../../cache/memory.js';
import type { SharedCache } from '../../ports/cache.js';
import { AuthCache, DELETED_KEY_MARGIN_MS, RefusedCredentials } from './authCache.js';
import type { CachedAuth, CachedPrincipal } from './authCache.js';
import { SharedAuthCache } from './sharedAuthCache.js';
import { errorEntries, forClient, parseJson } from './errorBody.js';
import { parseRetryAfter } from './upstream.js';
import type { Upstream, UpstreamResponse } from './upstream.js';
import { isUuid } from '../../model/keyIds.js';
import { ClockedLRU } from '../../cache/lru.js';
import { isCancelled } from '../../shared/callSignal.js';

const SERVICE = KEY_SERVICE;
const PATH = '/api/v1/apikey';

/** How long a credential the key service refused is answered 401 without asking again, in ms. */
export const REFUSED_CREDENTIAL_TTL_MS = 5000;
/** Refused credentials remembered at most; the oldest goes first. */
export const REFUSED_CREDENTIAL_MAX_ENTRIES = 10_000;

/** What may be sent as X-Forwarded-For: printable ASCII, no longer than a proxy chain needs.
 * Anything else is left out rather than let a header break the request. */
const FORWARDED_FOR = /^[\x20-\x7e]{1,512}$/;

function isoDate(value: unknown): Date | null {
  if (typeof value !== 'string') return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

function toApiKey(raw: unknown): ApiKeyModel | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const r = raw as Record<string, unknown>;
  if (typeof r.id !== 'string' || typeof r.userId !== 'string') return null;
  return {
    id: r.id,
    userId: r.userId,
    name: typeof r.name === 'string' ? r.name : '',
    // The original lists {id, userId, name} only; newer deployments may add these.
    createdAt: isoDate(r.createdAt),
    expiresAt: isoDate(r.expiresAt),
    lastUsedAt: isoDate(r.lastUsedAt),
    // a key service without scopes (the original) restricts no key by them
    scopes: Array.isArray(r.scopes) ? API_KEY_SCOPES.filter((scope) => (r.scopes as unknown[]).includes(scope)) : API_KEY_SCOPES,
    rateLimitPerSecond: wholeOrNull(r.rateLimitPerSecond),
    dailyQuota: wholeOrNull(r.dailyQuota),
  };
}

const wholeOrNull = (value: unknown): number | null => (typeof value === 'number' && Number.isSafeInteger(value) ? value : null);

/** One day of a recs-gateway key service's usage answer; null for anything else. */
function toUsage(raw: unknown): ApiKeyUsageModel | null {
  const r = raw as Record<string, unknown> | null;
  if (typeof r !== 'object' || r === null || typeof r.day !== 'string') return null;
  return { day: r.day, requests: wholeOrNull(r.requests) ?? 0, refused: wholeOrNull(r.refused) ?? 0 };
}

/** Whether a recs-gateway key service's refusal was for a key's quota (the entry's reason). */
function isQuotaRefusal(body: unknown): boolean {
  const entries = Array.isArray(body) ? body : (body as { errors?: unknown } | undefined)?.errors;
  return Array.isArray(entries) && (entries[0] as { reason?: unknown } | undefined)?.reason === ErrorCode.QUOTA_EXCEEDED;
}

/** The scope a recs-gateway key service said a refused request lacks, if it said one. */
function scopeOf(body: unknown): ApiKeyScope | undefined {
  const entries = Array.isArray(body) ? body : (body as { errors?: unknown } | undefined)?.errors;
  if (!Array.isArray(entries)) return undefined;
  const said = (entries[0] as { scope?: unknown } | undefined)?.scope;
  return API_KEY_SCOPES.find((scope) => scope === said);
}

/** What a recs-gateway key service says of the key a request came with (X-Api-Key-Id, X-Api-Key-Scopes, X-Api-Key-Limited). */
interface DescribedKey {
  keyId: string | null;
  /** undefined: not said, every scope (the key service decides each call). */
  scopes?: ApiKeyScope[];
  /** The key has a rate or quota of its own: the key service must see each of its requests to count it. */
  limited: boolean;
}

function describedKey(headers: UpstreamResponse['headers']): DescribedKey {
  const id = headers['x-api-key-id'];
  const scopes = headers['x-api-key-scopes'];
  const described: DescribedKey = { keyId: typeof id === 'string' && isUuid(id) ? id.toLowerCase() : null, limited: headers['x-api-key-limited'] === 'true' };
  if (typeof scopes === 'string') described.scopes = API_KEY_SCOPES.filter((scope) => scopes.split(',').includes(scope));
  return described;
}

const byName = (a: ApiKeyModel, b: ApiKeyModel): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

type Operation = 'authenticate' | 'list' | 'create' | 'delete' | 'rotate' | 'update' | 'usage';

/** The API key interface over HTTP (Walmart Labs' Concord): the client's own Authorization is
 * forwarded on every call, so the key service decides who may do what. */
export class RestKeyService implements KeyService {
  private readonly cache: AuthCache;
  private readonly refused: RefusedCredentials;
  private readonly inflight = new Map<string, { promise: Promise<CachedPrincipal>; controller: AbortController; waiters: number }>();
  private readonly shared: SharedAuthCache | undefined;
  /** Whether other gateway processes share the cache, and so may delete a key this one remembers. */
  private readonly crossProcess: boolean;
  /** How long a key deleted through this gateway stays refused by every cache, in ms. */
  private readonly deletedHoldMs: number;
  /** Credentials of keys with limits of their own: never kept nor joined, each request checked (and so counted) by the key service. */
  private readonly limited: ClockedLRU<string, true>;

  constructor(
    private readonly upstream: Upstream,
    authCacheTtlMs: number,
    authCacheMaxEntries: number,
    /** Shares key authentications between gateway processes; default: this process only. */
    sharedCache?: SharedCache,
  ) {
    this.cache = new AuthCache(authCacheTtlMs, authCacheMaxEntries);
    this.refused = new RefusedCredentials(REFUSED_CREDENTIAL_TTL_MS, REFUSED_CREDENTIAL_MAX_ENTRIES);
    this.shared = sharedCache ? new SharedAuthCache(sharedCache, authCacheTtlMs) : undefined;
    // in process only, no other process deletes a key unheard: a remembered key needs no check on use
    this.crossProcess = sharedCache !== undefined && !(sharedCache instanceof MemoryCache);
    this.deletedHoldMs = authCacheTtlMs + DELETED_KEY_MARGIN_MS;
    this.limited = new ClockedLRU({ max: Math.max(1_000, authCacheMaxEntries) });
  }

  async authenticate(authorization: string, options: CallOptions = {}): Promise<PrincipalModel> {
    if (typeof authorization !== 'string') throw unauthenticated();
    const credential = parseAuthorization(authorization);
    if (credential === null) throw unauthenticated();
    const credentialId = credentialIdOf(authorization);
    const cached = this.cache.get(credentialId);
    if (cached !== undefined) {
      if (!this.deletableElsewhere(cached) || !(await this.shared!.anyDeleted(cached.keyIds))) {
        return withAuthorization(cached.principal, authorization);
      }
      this.cache.forget(credentialId);
    }
    if (this.refused.has(credentialId)) throw unauthenticated();
    if (this.limited.has(credentialId)) return this.checkEach(authorization, credentialId, credential, options);
    const shared = credential.kind === 'key' ? await this.shared?.get(credentialId) : undefined;
    if (shared !== undefined) {
      this.cache.set(shared);
      return withAuthorization(shared.principal, authorization);
    }
    // an authentication that ended while the shared cache was read answers after this request arrived
    const justAuthenticated = this.cache.get(credentialId);
    if (justAuthenticated !== undefined) return withAuthorization(justAuthenticated.principal, authorization);
    // a check to be sent (none of this credential under way to join): whoever bounds them may refuse it
    const joins = this.inflight.get(credentialId)?.controller.signal.aborted === false;
    if (options.beforeCheck !== undefined && !joins) await options.beforeCheck();
    const principal = await this.sharedLookup(authorization, credentialId, credential, options);
    // a limited key's request that joined another's check was not counted: it is checked on its own
    if (joins && this.limited.has(credentialId)) return this.checkEach(authorization, credentialId, credential, options);
    return withAuthorization(principal, authorization);
  }

  /** A limited key's request, checked by the key service on its own: counted there, and refused
   * there past the key's rate or quota (RATE_LIMITED, QUOTA_EXCEEDED passed on). */
  private async checkEach(authorization: string, credentialId: string, credential: Credential, options: CallOptions): Promise<PrincipalModel> {
    await options.beforeCheck?.();
    return withAuthorization(await this.lookup(authorization, credentialId, credential, options), authorization);
  }

  /** A credential this process authenticated within the TTL; not a shared one, which another process may have deleted. */
  authenticateKnown(authorization: string, connection?: object): PrincipalModel | undefined {
    if (typeof authorization !== 'string') return undefined;
    const cached = this.cache.get(connectionCredentialId(connection, authorization));
    return cached === undefined || this.deletableElsewhere(cached) ? undefined : withAuthorization(cached.principal, authorization);
  }

  /** Whether another gateway process may have deleted this credential's key: it must be asked on each use. */
  private deletableElsewhere(auth: CachedAuth): boolean {
    return this.crossProcess && auth.principal.authenticatedBy === 'API_KEY';
  }

  async listKeys(principal: PrincipalModel, of?: UserRef | null, options: CallOptions = {}): Promise<ApiKeyModel[]> {
    // The interface lists the caller's own keys only; nobody is known to be an administrator here.
    if (of && (of.username !== principal.user.username || (of.domain ?? null) !== principal.user.domain)) throw forbidden();
    return this.list(principal.authorization, 'list', options);
  }

  async createKey(principal: PrincipalModel, input: CreateApiKeyInput, options: CallOptions = {}): Promise<CreatedApiKeyModel> {
    const body: Record<string, unknown> = {};
    if (input.username != null) body.username = input.username;
    if (input.userDomain != null) body.userDomain = input.userDomain;
    if (input.name != null) body.name = input.name;
    if (input.expiresInDays != null) body.expiresInDays = input.expiresInDays;
    if (input.scopes != null) body.scopes = input.scopes;
    if (input.rateLimitPerSecond !== undefined) body.rateLimitPerSecond = input.rateLimitPerSecond;
    if (input.dailyQuota !== undefined) body.dailyQuota = input.dailyQuota;
    const forOther = input.username != null && input.username !== principal.user.username;
    const response = await this.upstream.request({
      method: 'POST',
      path: PATH,
      headers: this.headers(principal.authorization, options.clientAddress),
      body: JSON.stringify(body),
      signal: options.signal,
      // the original answers 500 for an unknown username: any client could provoke that
      serverErrorIsFailure: !forOther,
    });
    if (response.status !== 200 && response.status !== 201) throw this.error(response, principal.authorization, 'create');
    const created = parseJson(response.text) as Record<string, unknown> | undefined;
    if (typeof created?.id !== 'string' || typeof created.key !== 'string') {
      throw upstreamUnavailable(SERVICE, 'unexpected create response');
    }
    const { id, key } = created;
    return { ok: true, id, key, apiKey: await this.describeNewKey(id, key, principal, input, options) };
  }

  async deleteKey(principal: PrincipalModel, id: string, options: CallOptions = {}): Promise<void> {
    // Checked here so that no value of id can reach another path of the key service.
    if (typeof id !== 'string' || !isUuid(id)) throw badUserInput('id must be a UUID', 'id');
    const response = await this.upstream.request({
      method: 'DELETE',
      path: `${PATH}/${encodeURIComponent(id)}`,
      headers: this.headers(principal.authorization, options.clientAddress),
      signal: options.signal,
    });
    if (response.status !== 200 && response.status !== 204) throw this.error(response, principal.authorization, 'delete', id);
    // By key id, not by the deleter: an administrator deleting alice's key must stop alice's
    // remembered logins, here and in every process on the shared cache.
    await this.forgetKey(id.toLowerCase());
  }

  async rotateKey(principal: PrincipalModel, id: string, graceSeconds: number, options: CallOptions = {}): Promise<CreatedApiKeyModel> {
    if (typeof id !== 'string' || !isUuid(id)) throw badUserInput('id must be a UUID', 'id');
    const response = await this.upstream.request({
      method: 'POST',
      path: `${PATH}/${encodeURIComponent(id)}/rotate`,
      headers: this.headers(principal.authorization, options.clientAddress),
      body: JSON.stringify({ gracePeriodSeconds: graceSeconds }),
      signal: options.signal,
    });
    if (response.status !== 200) throw this.error(response, principal.authorization, 'rotate', id);
    const rotated = parseJson(response.text) as Record<string, unknown> | undefined;
    const apiKey = toApiKey(rotated?.apiKey);
    if (typeof rotated?.key !== 'string' || apiKey === null) throw upstreamUnavailable(SERVICE, 'unexpected rotate response');
    if (graceSeconds === 0) await this.forgetKey(apiKey.id.toLowerCase());
    return { ok: true, id: apiKey.id, key: rotated.key, apiKey };
  }

  async updateKey(principal: PrincipalModel, id: string, input: UpdateApiKeyInput, options: CallOptions = {}): Promise<ApiKeyModel> {
    if (typeof id !== 'string' || !isUuid(id)) throw badUserInput('id must be a UUID', 'id');
    const body: Record<string, unknown> = {};
    if (input.name != null) body.name = input.name;
    if (input.scopes != null) body.scopes = input.scopes;
    if (input.rateLimitPerSecond !== undefined) body.rateLimitPerSecond = input.rateLimitPerSecond;
    if (input.dailyQuota !== undefined) body.dailyQuota = input.dailyQuota;
    const response = await this.upstream.request({
      method: 'PATCH',
      path: `${PATH}/${encodeURIComponent(id)}`,
      headers: this.headers(principal.authorization, options.clientAddress),
      body: JSON.stringify(body),
      signal: options.signal,
    });
    if (response.status !== 200) throw this.error(response, principal.authorization, 'update', id);
    const updated = toApiKey(parseJson(response.text));
    if (updated === null) throw upstreamUnavailable(SERVICE, 'unexpected update response');
    // a narrowed key's remembered scopes must not outlive the change
    if (input.scopes != null) await this.forgetKey(updated.id.toLowerCase());
    return updated;
  }

  async keyUsage(principal: PrincipalModel, id: string, days: number, options: CallOptions = {}): Promise<ApiKeyUsageModel[]> {
    if (typeof id !== 'string' || !isUuid(id)) throw badUserInput('id must be a UUID', 'id');
    const response = await this.upstream.request({
      method: 'GET',
      path: `${PATH}/${encodeURIComponent(id)}/usage?days=${days}`,
      headers: this.headers(principal.authorization, options.clientAddress),
      signal: options.signal,
    });
    if (response.status !== 200) throw this.error(response, principal.authorization, 'usage', id);
    const rows = (parseJson(response.text) as { usage?: unknown } | undefined)?.usage;
    if (!Array.isArray(rows)) throw upstreamUnavailable(SERVICE, 'unexpected usage response');
    return rows.map(toUsage).filter((day): day is ApiKeyUsageModel => day !== null);
  }

  /** A key changed so that remembered credentials may no longer hold: asked again, here and on every process sharing the cache. */
  private async forgetKey(keyId: string): Promise<void> {
    this.cache.evictKey(keyId, this.deletedHoldMs);
    await this.shared?.markDeleted(keyId, this.deletedHoldMs);
  }

  /** Concurrent authentications of one credential share one upstream call. */
  private async sharedLookup(
    authorization: string, credentialId: string, credential: Credential, options: CallOptions,
  ): Promise<CachedPrincipal> {
    const { signal } = options;
    let flight = this.inflight.get(credentialId);
    // one stopped (every caller had gone) and not yet settled is no answer for a caller still here
    if (flight === undefined || flight.controller.signal.aborted) {
      const controller = new AbortController();
      // the first caller's address goes upstream: the others sent the very same credential
      const promise = this.lookup(authorization, credentialId, credential, { signal: controller.signal, clientAddress: options.clientAddress }).finally(() => {
        if (this.inflight.get(credentialId)?.promise === promise) this.inflight.delete(credentialId);
      });
      // handled here too: a caller gone before it came attaches nothing, and a rejection unheard
      // would end the process
      promise.catch(() => undefined);
      flight = { promise, controller, waiters: 0 };
      this.inflight.set(credentialId, flight);
    }
    const shared = flight;
    shared.waiters++;
    // Each caller waits on its own deadline; the shared call is cancelled only when all have gone.
    if (signal === undefined) return shared.promise.finally(() => shared.waiters--);
    return new Promise<CachedPrincipal>((resolve, reject) => {
      const onAbort = (): void => {
        if (--shared.waiters === 0) shared.controller.abort(signal.reason);
        reject(pastDeadline(SERVICE));
      };
      if (isCancelled(signal)) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      shared.promise.then(
        (value) => { signal.removeEventListener('abort', onAbort); shared.waiters--; resolve(value); },
        (error: unknown) => { signal.removeEventListener('abort', onAbort); shared.waiters--; reject(error); },
      );
    });
  }

  private async lookup(
    authorization: string, credentialId: string, credential: Credential, options: CallOptions,
  ): Promise<CachedPrincipal> {
    let keys: ApiKeyModel[];
    let described: DescribedKey;
    try {
      ({ keys, described } = await this.listing(authorization, 'authenticate', options));
    } catch (error) {
      // only a refusal is remembered: a 429 or an outage says nothing about the credential
      if (error instanceof GatewayError && error.code === ErrorCode.UNAUTHENTICATED) this.refused.add(credentialId);
      throw error;
    }
    const principal: CachedPrincipal = {
      user: {
        id: keys[0]?.userId ?? null,
        username: credential.kind === 'password' ? credential.username : null,
        domain: credential.kind === 'password' ? credential.domain : null,
        // the interface does not say; the key service still enforces it on every call
        isAdmin: false,
      },
      authenticatedBy: credential.kind === 'key' ? 'API_KEY' : 'PASSWORD',
      keyId: described.keyId,
      credentialId,
    };
    if (described.scopes !== undefined) principal.scopes = described.scopes;
    if (described.limited) {
      this.limited.set(credentialId, true);
      return principal;
    }
    this.limited.delete(credentialId);
    const keyIds = keys.map((k) => k.id.toLowerCase());
    if (described.keyId !== null && !keyIds.includes(described.keyId)) keyIds.push(described.keyId);
    const auth: CachedAuth = { principal, keyIds };
    this.cache.set(auth);
    await this.shared?.set(auth);
    return principal;
  }

  private async list(authorization: string, operation: Operation, options: CallOptions): Promise<ApiKeyModel[]> {
    return (await this.listing(authorization, operation, options)).keys;
  }

  /** The credential's keys, and the key it is as a recs-gateway key service describes it. A key it
   * refuses the list for want of KEYS_MANAGE alone is a valid key: no keys, its own scopes. */
  private async listing(authorization: string, operation: Operation, options: CallOptions): Promise<{ keys: ApiKeyModel[]; described: DescribedKey }> {
    const response = await this.upstream.request({
      method: 'GET',
      path: PATH,
      headers: this.headers(authorization, options.clientAddress),
      signal: options.signal,
      // a rate-limited login check is that caller's answer: a retry spends the budget all callers share
      retryRateLimited: operation !== 'authenticate',
    });
    const described = describedKey(response.headers);
    const withoutKeysManage = described.scopes !== undefined && !described.scopes.includes('KEYS_MANAGE');
    if (operation === 'authenticate' && response.status === 403 && withoutKeysManage && scopeOf(parseJson(response.text)) === 'KEYS_MANAGE') {
      return { keys: [], described };
    }
    if (response.status !== 200) throw this.error(response, authorization, operation);
    const body = parseJson(response.text);
    if (!Array.isArray(body)) throw upstreamUnavailable(SERVICE, 'unexpected list response');
    return { keys: body.map(toApiKey).filter((k): k is ApiKeyModel => k !== null).sort(byName), described };
  }

  /** The create response has no userId or name: listed with the new key; where that fails, the key exists all the same. */
  private async describeNewKey(
    id: string, key: string, principal: PrincipalModel, input: CreateApiKeyInput, options: CallOptions,
  ): Promise<ApiKeyModel> {
    try {
      const found = (await this.list(key, 'list', options)).find((k) => k.id === id);
      if (found) return found;
    } catch {
      // fall through
    }
    const own = input.username == null || input.username === principal.user.username;
    return {
      id,
      userId: own ? (principal.user.id ?? '') : '',
      name: input.name ?? '',
      createdAt: null,
      expiresAt: null,
      lastUsedAt: null,
      scopes: input.scopes ?? API_KEY_SCOPES,
      rateLimitPerSecond: input.rateLimitPerSecond ?? null,
      dailyQuota: input.dailyQuota ?? null,
    };
  }

  private headers(authorization: string, clientAddress: string | undefined): Record<string, string> {
    const headers: Record<string, string> = { authorization, 'content-type': 'application/json' };
    // the upstream's own limits (failed logins per address) then count the caller, not the gateway
    if (clientAddress !== undefined && FORWARDED_FOR.test(clientAddress)) headers['x-forwarded-for'] = clientAddress;
    return headers;
  }

  /** The one place a key service status becomes an error. */
  private error({ status, text, headers }: UpstreamResponse, authorization: string, operation: Operation, id?: string): GatewayError {
    const entries = errorEntries(parseJson(text), text) ?? [];
    const first = entries[0] === undefined ? undefined : { ...entries[0], message: forClient(entries[0].message, authorization) };
    if (status === 401) return unauthenticated();
    if (operation === 'authenticate' && status === 403) return unauthenticated();
    if (status === 403) {
      // a recs-gateway's refusal for a scope is passed on as it is
      const scope = scopeOf(parseJson(text));
      if (scope !== undefined) return scopeRefusal(scope);
      // another user's key answers like an unknown one: ids of others are nobody's business
      return operation === 'delete' || operation === 'rotate' || operation === 'update' || operation === 'usage' ? notFound(`API key not found: ${id ?? ''}`) : forbidden();
    }
    if (status === 400 && first !== undefined) {
      if (/^API key not found/i.test(first.message)) return notFound(first.message);
      const field = typeof first.code === 'string' && first.code !== '' ? first.code : '*';
      return badUserInput(first.message, field);
    }
    if (status === 400) return badUserInput('The key service refused the request', '*');
    if (status === 404 && operation === 'delete') return badUserInput('id must be a UUID', 'id');
    if ((status === 404 || status === 405) && (operation === 'rotate' || operation === 'update' || operation === 'usage')) return upstreamRejected(SERVICE, 'the key service does not rotate or update keys (not a recs-gateway)');
    if (status === 429 && isQuotaRefusal(parseJson(text))) return quotaExceeded((parseRetryAfter(headers['retry-after']) ?? 1000) / 1000);
    if (status === 429) return rateLimited((parseRetryAfter(headers['retry-after']) ?? 1000) / 1000);
    if (status >= 500) return upstreamUnavailable(SERVICE, `HTTP ${status}`);
    return upstreamRejected(SERVICE, `unexpected HTTP ${status}`);
  }
}
