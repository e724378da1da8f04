import {
  connectionCredentialId, credentialId, parseAuthorization, withAuthorization, type Credential,
} from '../../../auth/authorization.js';
import { DEFAULT_MAX_KEYS_PER_USER } from '../../../config/defaults.js';
import { badUserInput, forbidden, notFound, unauthenticated } from '../../../errors.js';
import {
  MAX_ROTATION_GRACE_SECONDS,
  MAX_USAGE_DAYS,
  type ApiKeyModel,
  type ApiKeyUsageModel,
  type CallOptions,
  type CreateApiKeyInput,
  type CreatedApiKeyModel,
  type KeyService,
  type PrincipalModel,
  type UpdateApiKeyInput,
  type UserModel,
  type UserRef,
} from '../../../ports/backend.js';
import { checkGrant, effectiveScopes, grantableScopes, holdsScope, parseScopes, scopeRefusal } from '../../../model/scopes.js';
import { generateApiKey, hashApiKey, KEY_NAME_RULE, KEY_NAME_RULE_TEXT } from './apiKeyValue.js';
import { verifyPassword } from './passwords.js';
import { lookupProblem } from './users.js';
import { KeyLimitReachedError, KeyNameTakenError, type KeyRecord, type KeyStore, type UserRecord } from './store.js';
import { isUuid } from '../../../model/keyIds.js';
import { callerOf, callerWaits, type Caller } from '../../../shared/callSignal.js';
import { ClockedLRU } from '../../../cache/lru.js';
import { checkLimitGrant, grantableLimits, parseLimit, utcDay } from '../../../model/keyLimits.js';
import { UsageCounter, USAGE_FLUSH_MS } from './usageCounter.js';

type Owner = Pick<UserModel, 'id' | 'isAdmin'>;

type PasswordCredential = Extract<Credential, { kind: 'password' }>;

const isExpired = (key: KeyRecord, now: number): boolean => key.expiresAt !== null && key.expiresAt.getTime() <= now;

/** Verified keys kept at most, and keys whose last use is remembered: the least recently used go first. */
const MAX_VERIFIED_KEYS = 10_000;

export interface EmbeddedKeyServiceOptions {
  /** How long a verified key is trusted without a lookup, in ms; default 30000, 0 off. Any change ends it at once. */
  verifiedKeyTtlMs?: number;
  /** How long a verified password sign-in is trusted without scrypt again, in ms; default 60000, 0 off. */
  verifiedPasswordTtlMs?: number;
  /** How often a key's lastUsedAt is written at most, in ms; default 60000. */
  lastUsedResolutionMs?: number;
  /** Default Date.now. */
  now?: () => number;
  /** MAX_KEYS_PER_USER; default 100: every key is a rate-limit bucket, so a user could multiply its rate. */
  maxKeysPerUser?: number;
  /** How often counted usage is written to the store, in ms; default USAGE_FLUSH_MS. */
  usageFlushMs?: number;
}

const toModel = (key: KeyRecord, owner: Pick<UserModel, 'isAdmin'>): ApiKeyModel => ({
  id: key.id,
  userId: key.userId,
  name: key.name,
  createdAt: key.createdAt,
  expiresAt: key.expiresAt,
  lastUsedAt: key.lastUsedAt,
  scopes: effectiveScopes(key.scopes, owner),
  rateLimitPerSecond: key.rateLimitPerSecond,
  dailyQuota: key.dailyQuota,
});

/** A rotated-out value works as its key until the grace ends, or the key expires, whichever is first. */
const untilGraceEnds = (key: KeyRecord, previousUntil: Date | undefined): KeyRecord =>
  previousUntil === undefined || (key.expiresAt !== null && key.expiresAt <= previousUntil) ? key : { ...key, expiresAt: previousUntil };

const toUserModel = (user: UserRecord): UserModel => ({
  id: user.id,
  username: user.username,
  domain: user.domain,
  isAdmin: user.isAdmin,
});

/** The API key interface in-process: upstream-facts.md's rules, and another user's key answers as an unknown one. */
export class EmbeddedKeyService implements KeyService {
  readonly checksKeysLocally = true;
  private readonly lastUsedResolutionMs: number;
  private readonly now: () => number;
  /** When each key's lastUsedAt was last written, so a busy key costs one write a minute. */
  private readonly lastTouched: ClockedLRU<string, number>;
  /** Verified keys and password sign-ins by credentialId (never the key or the password), valid
   * for the store's data version in verifiedVersion; a password's entry has no key. */
  private readonly verified: ClockedLRU<string, { principal: Omit<PrincipalModel, 'authorization'>; key: KeyRecord | null }>;
  /** The data version the verified keys hold for; none read yet (NaN equals nothing). */
  private verifiedVersion = Number.NaN;
  private readonly verifiedKeyTtlMs: number;
  private readonly maxKeysPerUser: number;
  private readonly verifiedPasswordTtlMs: number;
  /** Password checks under way, with their callers: one still queued when all have gone is skipped. */
  private readonly signingIn = new Map<string, { done: Promise<PrincipalModel>; callers: Caller[] }>();
  private versionThisTurn: number | Promise<number> | undefined;
  private readonly usage: UsageCounter;
  private readonly forgetVersion = (): void => {
    this.versionThisTurn = undefined;
  };

  constructor(
    private readonly store: KeyStore,
    options: EmbeddedKeyServiceOptions = {},
  ) {
    this.lastUsedResolutionMs = options.lastUsedResolutionMs ?? 60_000;
    this.now = options.now ?? Date.now;
    this.verifiedKeyTtlMs = options.verifiedKeyTtlMs ?? 30_000;
    this.maxKeysPerUser = options.maxKeysPerUser ?? DEFAULT_MAX_KEYS_PER_USER;
    this.verifiedPasswordTtlMs = options.verifiedPasswordTtlMs ?? 60_000;
    this.usage = new UsageCounter(store, this.now, options.usageFlushMs ?? USAGE_FLUSH_MS);
    this.verified = new ClockedLRU({ max: MAX_VERIFIED_KEYS, now: this.now });
    // an entry is of use until the next write is due
    this.lastTouched = new ClockedLRU({ max: MAX_VERIFIED_KEYS, ttl: this.lastUsedResolutionMs, now: this.now });
  }

  async authenticate(authorization: string, options?: CallOptions): Promise<PrincipalModel> {
    const now = this.now();
    const id = credentialId(authorization);
    // the version before the data it vouches for: a change made meanwhile is not hidden by what was read
    let version = Number.NaN;
    if (this.usesVerified()) {
      const read = this.storeVersion();
      version = typeof read === 'number' ? read : await read;
      const known = this.verifiedPrincipal(id, authorization, now, version);
      if (known !== undefined) return known;
    }

    const credential = parseAuthorization(authorization);
    if (credential === null) throw unauthenticated();

    if (credential.kind === 'password') {
      // one scrypt for a credential sent many times at once, under one data version only: a check
      // that read the user before a change must not answer for a request after it
      const flightKey = `${version}\n${id}`;
      let flight = this.signingIn.get(flightKey);
      if (flight === undefined) {
        const callers: Caller[] = [];
        const wanted = (): boolean => callers.some(callerWaits);
        flight = { done: this.signIn(credential, authorization, id, version, now, wanted).finally(() => this.signingIn.delete(flightKey)), callers };
        this.signingIn.set(flightKey, flight);
      }
      flight.callers.push(callerOf(options));
      return withAuthorization(await flight.done, authorization);
    }

    const found = await this.store.findKeyByHash(hashApiKey(credential.key));
    const key = found && untilGraceEnds(found.key, found.previousUntil);
    if (!found || !key || isExpired(key, now)) throw unauthenticated();
    this.touch(key, now);
    const principal = this.principal(found.user, 'API_KEY', key, authorization, id);
    if (this.verifiedKeyTtlMs > 0) this.remember(id, principal, key, version, now, this.verifiedKeyTtlMs);
    return principal;
  }

  private async signIn(
    { username, domain, password }: PasswordCredential,
    authorization: string,
    id: string,
    version: number,
    now: number,
    wanted: () => boolean,
  ): Promise<PrincipalModel> {
    const user = await this.store.findUser(username, domain);
    // verifyPassword hashes against a decoy when the user is unknown: the same time either way
    const ok = await verifyPassword(password, user?.passwordHash ?? null, wanted);
    if (!user || !ok) throw unauthenticated();
    const principal = this.principal(user, 'PASSWORD', null, authorization, id);
    if (this.verifiedPasswordTtlMs > 0) this.remember(id, principal, null, version, now, this.verifiedPasswordTtlMs);
    return principal;
  }

  /** Keeps a verified credential, when what it was verified against is still the store's data as
   * last read: `version` was read before the lookup, and NaN (none read) matches nothing. It is
   * trusted for `ttlMs` from `since`, when the lookup began. */
  private remember(id: string, principal: PrincipalModel, key: KeyRecord | null, version: number, since: number, ttlMs: number): void {
    if (version !== this.verifiedVersion) return;
    const { authorization: _secret, ...kept } = principal;
    this.verified.set(id, { principal: kept, key }, { ttl: ttlMs, start: since });
  }

  /** Forgets the user's verified password sign-ins: their keys changed, so must what vouches for them. */
  private forgetPasswordsOf(userId: string): void {
    const gone = [...this.verified.entries()].filter(([, entry]) => entry.key === null && entry.principal.user.id === userId);
    for (const [credential] of gone) this.verified.delete(credential);
  }

  /** Answers where the store's version is read without waiting (SQLite): PostgreSQL's is a query. */
  authenticateKnown(authorization: string, connection?: object): PrincipalModel | undefined {
    if (!this.usesVerified() || this.store.dataVersion === undefined) return undefined;
    const version = this.storeVersion() as number;
    return this.verifiedPrincipal(connectionCredentialId(connection, authorization), authorization, this.now(), version);
  }

  async authenticateVerified(authorization: string): Promise<PrincipalModel | undefined> {
    if (!this.usesVerified()) return undefined;
    const version = await this.storeVersion();
    return this.verifiedPrincipal(credentialId(authorization), authorization, this.now(), version);
  }

  private usesVerified(): boolean {
    return (
      (this.verifiedKeyTtlMs > 0 || this.verifiedPasswordTtlMs > 0) &&
      (this.store.dataVersion !== undefined || this.store.readDataVersion !== undefined)
    );
  }

  /** A verified credential still trusted, by the hash of the header as sent: a hit needs no parsing. */
  private verifiedPrincipal(id: string, authorization: string, now: number, version: number): PrincipalModel | undefined {
    // Another process (a CLI, a second gateway on the same store) changed the store: trust nothing kept.
    if (version !== this.verifiedVersion) {
      // a read that lost a race with a later one (PostgreSQL's reads overlap): a miss, and nothing dropped
      if (version < this.verifiedVersion) return undefined;
      this.verified.clear();
      this.verifiedVersion = version;
    }
    const hit = this.verified.get(id);
    if (hit === undefined) return undefined;
    if (hit.key !== null) {
      if (isExpired(hit.key, now)) return undefined;
      this.touch(hit.key, now);
    }
    return withAuthorization(hit.principal, authorization);
  }

  async listKeys(principal: PrincipalModel, of?: UserRef | null): Promise<ApiKeyModel[]> {
    const owner = await this.targetUser(principal, of?.username ?? null, of?.domain ?? null);
    return (await this.store.listKeys(owner.id!)).map((key) => toModel(key, owner));
  }

  async createKey(principal: PrincipalModel, input: CreateApiKeyInput): Promise<CreatedApiKeyModel> {
    if (input.name !== undefined && input.name !== null && !KEY_NAME_RULE.test(input.name)) {
      throw badUserInput(`Invalid API key name: ${KEY_NAME_RULE_TEXT}`, 'name');
    }
    const days = input.expiresInDays;
    if (days !== undefined && days !== null && (!Number.isInteger(days) || days < 1 || days > 3650)) {
      throw badUserInput('expiresInDays must be a whole number from 1 to 3650', 'expiresInDays');
    }
    if (!input.username && input.userDomain) throw badUserInput('userDomain needs username', 'userDomain');
    const asked = input.scopes == null ? null : parseScopes(input.scopes);
    const owner = await this.targetUser(principal, input.username ?? null, input.userDomain ?? null);
    const limits = grantableLimits(principal, input);
    const scopes = grantableScopes(asked, principal, owner);
    const userId = owner.id!;
    this.forgetPasswordsOf(userId);

    const key = generateApiKey();
    try {
      const record = await this.store.createKey({
        userId,
        name: input.name ?? null,
        hash: hashApiKey(key),
        expiresAt: days ? new Date(this.now() + days * 86_400_000) : null,
        scopes,
        ...limits,
        maxKeysPerUser: this.maxKeysPerUser,
      });
      return { ok: true, id: record.id, key, apiKey: toModel(record, owner) };
    } catch (error) {
      if (error instanceof KeyNameTakenError) {
        throw badUserInput(`An API key named ${input.name ?? 'that'} already exists for this user`, 'name');
      }
      if (error instanceof KeyLimitReachedError) {
        throw badUserInput(
          `The user already has ${this.maxKeysPerUser} API keys, the most a user may have: delete one to create another`,
        );
      }
      throw error;
    }
  }

  async deleteKey(principal: PrincipalModel, id: string): Promise<void> {
    if (!isUuid(id)) throw badUserInput('id must be a UUID', 'id');
    const owner = principal.user.isAdmin ? null : principal.user.id;
    if (!(await this.store.deleteKey(id.toLowerCase(), owner))) throw notFound(`API key not found: ${id}`);
    this.lastTouched.delete(id.toLowerCase());
    this.forgetKey(id.toLowerCase());
  }

  async rotateKey(principal: PrincipalModel, id: string, graceSeconds: number): Promise<CreatedApiKeyModel> {
    if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > MAX_ROTATION_GRACE_SECONDS) {
      throw badUserInput(`gracePeriodSeconds must be a whole number from 0 to ${MAX_ROTATION_GRACE_SECONDS} (30 days)`, 'gracePeriodSeconds');
    }
    const { key: current, owner } = await this.ownedKey(principal, id);
    // a new value of a wider key would be a wider credential in the caller's hands
    for (const scope of effectiveScopes(current.scopes, owner)) if (!holdsScope(principal, scope)) throw scopeRefusal(scope);
    // and a new value of a key with more room than the caller's own would lift the caller's limits
    checkLimitGrant(principal, 'rateLimitPerSecond', current.rateLimitPerSecond);
    checkLimitGrant(principal, 'dailyQuota', current.dailyQuota);
    const value = generateApiKey();
    const until = graceSeconds > 0 ? new Date(this.now() + graceSeconds * 1000) : null;
    const record = await this.store.rotateKey(current.id, principal.user.isAdmin ? null : principal.user.id, hashApiKey(value), until);
    if (record === null) throw notFound(`API key not found: ${id}`);
    this.forgetKey(record.id);
    return { ok: true, id: record.id, key: value, apiKey: toModel(record, owner) };
  }

  async updateKey(principal: PrincipalModel, id: string, input: UpdateApiKeyInput): Promise<ApiKeyModel> {
    if (input.name != null && !KEY_NAME_RULE.test(input.name)) throw badUserInput(`Invalid API key name: ${KEY_NAME_RULE_TEXT}`, 'name');
    const asked = input.scopes == null ? null : parseScopes(input.scopes);
    const rate = parseLimit(input.rateLimitPerSecond, 'rateLimitPerSecond');
    const quota = parseLimit(input.dailyQuota, 'dailyQuota');
    const { key: current, owner } = await this.ownedKey(principal, id);
    if (asked !== null) checkGrant(asked, principal, owner, effectiveScopes(current.scopes, owner));
    if (rate !== undefined) checkLimitGrant(principal, 'rateLimitPerSecond', rate);
    if (quota !== undefined) checkLimitGrant(principal, 'dailyQuota', quota);
    try {
      const changes = {
        ...(input.name != null ? { name: input.name } : {}), ...(asked !== null ? { scopes: asked } : {}),
        ...(rate !== undefined ? { rateLimitPerSecond: rate } : {}), ...(quota !== undefined ? { dailyQuota: quota } : {}),
      };
      const record = await this.store.updateKey(current.id, principal.user.isAdmin ? null : principal.user.id, changes);
      if (record === null) throw notFound(`API key not found: ${id}`);
      this.forgetKey(record.id);
      return toModel(record, owner);
    } catch (error) {
      if (error instanceof KeyNameTakenError) throw badUserInput(`An API key named ${input.name ?? 'that'} already exists for this user`, 'name');
      throw error;
    }
  }

  async keyUsage(principal: PrincipalModel, id: string, days: number): Promise<ApiKeyUsageModel[]> {
    if (!Number.isInteger(days) || days < 1 || days > MAX_USAGE_DAYS) throw badUserInput(`days must be a whole number from 1 to ${MAX_USAGE_DAYS}`, 'days');
    const { key } = await this.ownedKey(principal, id);
    const since = utcDay(this.now() - (days - 1) * 86_400_000);
    const byDay = new Map((await this.store.readUsage(key.id, since)).map((row) => [row.day, { ...row }]));
    for (const count of this.usage.unwritten(key.id)) {
      if (count.day < since) continue;
      const row = byDay.get(count.day) ?? { day: count.day, requests: 0, refused: 0 };
      row.requests += count.requests;
      row.refused += count.refused;
      byDay.set(count.day, row);
    }
    return [...byDay.values()].sort((a, b) => (a.day < b.day ? 1 : -1));
  }

  countUse(keyId: string, refused: boolean): void {
    this.usage.count(keyId, refused);
  }

  quotaLeft(keyId: string, dailyQuota: number): boolean | undefined {
    return this.usage.quotaLeft(keyId, dailyQuota);
  }

  settleQuota(keyId: string): Promise<void> {
    return this.usage.settleQuota(keyId);
  }

  /** Writes the usage counted and not yet written: before the store closes. */
  close(): Promise<void> {
    return this.usage.close();
  }

  /** The key by id with its owner: the caller's own, or anyone's for an administrator; NOT_FOUND alike otherwise. */
  private async ownedKey(principal: PrincipalModel, id: string): Promise<{ key: KeyRecord; owner: Owner }> {
    if (!isUuid(id)) throw badUserInput('id must be a UUID', 'id');
    const found = await this.store.findKeyById(id.toLowerCase());
    if (found === null || (!principal.user.isAdmin && found.user.id !== principal.user.id)) throw notFound(`API key not found: ${id}`);
    return { key: found.key, owner: found.user };
  }

  /** This process's own write does not move the data version: forget what it verified of the key here and now. */
  private forgetKey(keyId: string): void {
    for (const [credential, entry] of [...this.verified.entries()]) {
      if (entry.key?.id === keyId) {
        this.verified.delete(credential);
        this.forgetPasswordsOf(entry.principal.user.id!);
      }
    }
  }

  /** The user a key operation acts on: the caller, or (administrators only) the one named. */
  private async targetUser(principal: PrincipalModel, username: string | null, domain: string | null): Promise<Owner> {
    const self = principal.user;
    const isSelf =
      username === null || (username === self.username && (domain || null) === (self.domain || null));
    if (isSelf) {
      if (self.id === null) throw unauthenticated();
      return self;
    }
    if (!self.isAdmin) throw forbidden();
    const problem = lookupProblem(username, domain || null);
    if (problem !== null) throw badUserInput(problem.message, problem.field);
    const user = await this.store.findUser(username, domain || null);
    if (!user) throw badUserInput(`User not found: ${domain ? `${username}@${domain}` : username}`, 'username');
    return user;
  }

  /** A key's principal holds the scopes it was given; a password's, and a key's given none, every one
   * (undefined): the user's rights (administrators only send events) are checked where they always were. */
  private principal(
    user: UserRecord,
    authenticatedBy: PrincipalModel['authenticatedBy'],
    key: KeyRecord | null,
    authorization: string,
    id: string = credentialId(authorization),
  ): PrincipalModel {
    const limits = key !== null && (key.rateLimitPerSecond !== null || key.dailyQuota !== null)
      ? { rateLimitPerSecond: key.rateLimitPerSecond, dailyQuota: key.dailyQuota } : null;
    return { user: toUserModel(user), authenticatedBy, keyId: key?.id ?? null, credentialId: id, authorization, scopes: key?.scopes ?? undefined, limits };
  }

  /** The store's data version, read at most once a turn of the event loop: the requests of one turn
   * arrived together, so a commit elsewhere meanwhile is concurrent with all of them. */
  private storeVersion(): number | Promise<number> {
    if (this.versionThisTurn === undefined) {
      if (this.store.dataVersion) {
        this.versionThisTurn = this.store.dataVersion();
      } else {
        const read = this.store.readDataVersion!();
        // a failed read fails the requests that wait for it, never the process
        read.catch(() => undefined);
        this.versionThisTurn = read;
      }
      setImmediate(this.forgetVersion);
    }
    return this.versionThisTurn;
  }

  private touch(key: KeyRecord, now: number): void {
    const last = this.lastTouched.get(key.id) ?? key.lastUsedAt?.getTime() ?? 0;
    if (now - last < this.lastUsedResolutionMs) return;
    this.lastTouched.set(key.id, now, { start: now });
    // best effort: a failed write costs an imprecise lastUsedAt, never the request
    this.store.touchKey(key.id, new Date(now)).catch(() => this.lastTouched.delete(key.id));
  }
}
