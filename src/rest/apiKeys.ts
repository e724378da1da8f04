import { ErrorCode, isGatewayError } from '../errors.js';
import {
  DEFAULT_ROTATION_GRACE_SECONDS, DEFAULT_USAGE_DAYS, MAX_USAGE_DAYS, type ApiKeyModel, type ApiKeyScope, type CallOptions, type CreateApiKeyInput, type KeyService, type PrincipalModel,
  type UpdateApiKeyInput,
} from '../ports/backend.js';
import { parseScopes } from '../model/scopes.js';
import { parseLimit } from '../model/keyLimits.js';
import { header, json } from './types.js';
import { unknownField } from './unknownField.js';
import type { RestRequest, RestResponse } from './types.js';
import { isUuid } from '../model/keyIds.js';
import type { Logger } from '../logger.js';
import { CallerGone } from '../shared/callSignal.js';

const COLLECTION = '/api/v1/apikey';
const ROTATE = '/rotate';
const USAGE = '/usage';
const CHALLENGE = { 'www-authenticate': 'Basic realm="recs-gateway"' };

const errors = (id: string, message: string): { id: string; message: string }[] => [{ id, message }];

/** Raised inside a handler for a request that is wrong before any service is asked. */
class Reply extends Error {
  constructor(readonly response: RestResponse) {
    super('reply');
  }
}

/** The one place an error becomes an API key response (upstream-facts.md). NOT_FOUND answers
 * as the original's unknown id (400), whether the key does not exist or is someone else's. */
export function apiKeyErrorResponse(error: unknown, authorization: string | undefined, keyId?: string, log?: Logger): RestResponse {
  if (error instanceof Reply) return error.response;
  // nobody is there to read it: no failure of ours to log
  if (error instanceof CallerGone) return json(503, errors('*', error.message));
  if (!isGatewayError(error)) {
    log?.error({ err: error }, 'api key request failed');
    return json(500, errors('*', 'Internal server error'));
  }
  switch (error.code) {
    case ErrorCode.UNAUTHENTICATED: {
      // Only a client that may answer with a password is invited to.
      const challenge = authorization === undefined || /^\s*basic\s/i.test(authorization);
      return json(401, errors('*', error.message), challenge ? CHALLENGE : {});
    }
    case ErrorCode.FORBIDDEN:
      // a scope refused is named, so that a recs-gateway in front passes the refusal on as it is
      return error.scope !== undefined
        ? json(403, [{ id: '*', message: error.message, scope: error.scope }])
        : json(403, errors('*', 'Operation is not permitted'));
    case ErrorCode.NOT_FOUND:
      return json(400, errors('*', keyId !== undefined ? `API key not found: ${keyId}` : error.message));
    case ErrorCode.BAD_USER_INPUT:
    case ErrorCode.BAD_REQUEST:
      return json(400, errors(error.field ?? '*', error.message));
    case ErrorCode.RATE_LIMITED:
      return json(429, errors('*', error.message), { 'retry-after': String(Math.ceil(error.retryAfter ?? 1)) });
    case ErrorCode.QUOTA_EXCEEDED:
      // named, so that a recs-gateway in front passes the refusal on as it is
      return json(429, [{ id: '*', message: error.message, reason: error.code }], { 'retry-after': String(Math.ceil(error.retryAfter ?? 1)) });
    case ErrorCode.UPSTREAM_UNAVAILABLE:
      return json(503, errors('*', error.message), error.retryAfter ? { 'retry-after': String(Math.ceil(error.retryAfter)) } : {});
    case ErrorCode.UPSTREAM_REJECTED:
      return json(502, errors('*', error.message));
    default:
      return json(500, errors('*', 'Internal server error'));
  }
}

/** application/json, as api-keys.md has the requests carry it, with any parameters (`; charset=utf-8`, or an empty one). */
const JSON_TYPE = /^application\/json[ \t]*(;.*)?$/i;

/** Whether a key's creation is sent as JSON: anything else, or nothing, is refused unread (apiKeyNotJson). */
export function isApiKeyJson(contentType: string | undefined): boolean {
  return contentType !== undefined && JSON_TYPE.test(contentType.trim());
}

/** A key's creation sent as anything but JSON, unread: 415 in the interface's error body. A form or text/plain
 * POST needs no preflight, so a page on another site could make a key with the Basic credentials a browser
 * remembers (Apollo's CSRF prevention guards /graphql; the ingestion twins refuse it alike). */
export function apiKeyNotJson(): RestResponse {
  return json(415, errors('*', 'Send the body as JSON: Content-Type: application/json'), { connection: 'close' });
}

/** A key's creation sent compressed (Content-Encoding), unread: 415 in the interface's error body, as the ingestion routes answer it. */
export function apiKeyEncoded(message: string, headers: Record<string, string>): RestResponse {
  return json(415, errors('*', message), headers);
}

/** A key's creation whose body passed its limit (BODY_LIMIT_BYTES): 413 in the interface's error body, the connection closed, as the ingestion routes answer it. */
export function apiKeyBodyTooLarge(message: string): RestResponse {
  return json(413, errors('*', message), { connection: 'close' });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function optionalString(body: Record<string, unknown>, field: string): string | null {
  const value = body[field];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw new Reply(json(400, errors(field, `${field} must be a string`)));
  return value;
}

/** What a key's creation reads (api-keys.md's create request, expiresInDays and scopes). */
const CREATE_FIELDS = ['username', 'userDomain', 'name', 'expiresInDays', 'scopes', 'rateLimitPerSecond', 'dailyQuota'] as const;
const UPDATE_FIELDS = ['name', 'scopes', 'rateLimitPerSecond', 'dailyQuota'] as const;
const ROTATE_FIELDS = ['gracePeriodSeconds'] as const;

/** The body as an object with only these fields: a misspelt `nmae` made a key under the default name (key#3). */
function fieldsOf(body: unknown, fields: readonly string[], what: string): Record<string, unknown> {
  if (!isObject(body)) throw new Reply(json(400, errors('*', 'The request body must be a JSON object')));
  for (const field in body) {
    if (fields.includes(field)) continue;
    const refused = unknownField(field, fields, `${what} takes only ${fields.join(', ')}`);
    throw new Reply(json(400, errors(refused.field, refused.message)));
  }
  return body;
}

function optionalScopes(body: Record<string, unknown>): ApiKeyScope[] | null {
  return body.scopes === undefined || body.scopes === null ? null : parseScopes(body.scopes);
}

function updateInput(raw: unknown): UpdateApiKeyInput {
  const body = fieldsOf(raw, UPDATE_FIELDS, "a key's update");
  return { name: optionalString(body, 'name'), scopes: optionalScopes(body), ...limitsOf(body) };
}

/** The limits as sent: left out stays out (a change keeps them), null is none; the key service checks the bounds. */
function limitsOf(body: Record<string, unknown>): Pick<UpdateApiKeyInput, 'rateLimitPerSecond' | 'dailyQuota'> {
  const limits: Pick<UpdateApiKeyInput, 'rateLimitPerSecond' | 'dailyQuota'> = {};
  for (const field of ['rateLimitPerSecond', 'dailyQuota'] as const) {
    if (body[field] !== undefined) limits[field] = parseLimit(body[field], field);
  }
  return limits;
}

function daysOf(query: URLSearchParams): number {
  const days = query.get('days');
  if (days === null) return DEFAULT_USAGE_DAYS;
  if (!/^\d{1,3}$/.test(days)) throw new Reply(json(400, errors('days', `days must be a whole number from 1 to ${MAX_USAGE_DAYS}`)));
  return Number(days);
}

function graceOf(raw: unknown): number {
  const body = fieldsOf(raw ?? {}, ROTATE_FIELDS, "a key's rotation");
  const grace = body.gracePeriodSeconds;
  if (grace === undefined || grace === null) return DEFAULT_ROTATION_GRACE_SECONDS;
  if (typeof grace !== 'number') throw new Reply(json(400, errors('gracePeriodSeconds', 'gracePeriodSeconds must be a whole number of seconds')));
  return grace;
}

function createInput(raw: unknown): CreateApiKeyInput {
  const body = fieldsOf(raw, CREATE_FIELDS, "a key's creation");
  const input: CreateApiKeyInput = {
    username: optionalString(body, 'username'),
    userDomain: optionalString(body, 'userDomain'),
    name: optionalString(body, 'name'),
    scopes: optionalScopes(body),
    ...limitsOf(body),
  };
  const days = body.expiresInDays;
  if (days !== undefined && days !== null) {
    if (typeof days !== 'number' || !Number.isSafeInteger(days) || days <= 0) {
      throw new Reply(json(400, errors('expiresInDays', 'expiresInDays must be a positive integer')));
    }
    input.expiresInDays = days;
  }
  return input;
}

const iso = (date: Date | null): string | null => (date === null ? null : date.toISOString());

function listed(key: ApiKeyModel): Record<string, unknown> {
  return {
    id: key.id, userId: key.userId, name: key.name,
    createdAt: iso(key.createdAt), expiresAt: iso(key.expiresAt), lastUsedAt: iso(key.lastUsedAt), scopes: key.scopes,
    rateLimitPerSecond: key.rateLimitPerSecond, dailyQuota: key.dailyQuota,
  };
}

async function authenticated(
  keys: KeyService, authorization: string | undefined, options: CallOptions,
): Promise<PrincipalModel> {
  if (authorization === undefined || authorization.trim() === '') {
    throw new Reply(json(401, errors('*', 'Authentication required'), CHALLENGE));
  }
  return keys.authenticate(authorization, options);
}

/** The API key interface of api-keys.md; null when the path is not one of its routes. */
export function serveApiKeys(req: RestRequest, keys: KeyService): Promise<RestResponse> | null {
  const path = req.path.replace(/\/+$/, '');
  if (path !== COLLECTION && !path.startsWith(`${COLLECTION}/`)) return null;
  return handle(req, path, keys);
}

async function handle(req: RestRequest, path: string, keys: KeyService): Promise<RestResponse> {
  const authorization = header(req, 'authorization');
  const options: CallOptions = req.signal ? { signal: req.signal } : {};
  let keyId: string | undefined;
  try {
    if (path === COLLECTION) {
      if (req.method !== 'GET' && req.method !== 'POST') {
        return json(405, errors('*', `Method ${req.method} not allowed`), { allow: 'GET, POST' });
      }
      const principal = await authenticated(keys, authorization, options);
      if (req.method === 'GET') {
        const list = await keys.listKeys(principal, null, options);
        return json(200, [...list].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map(listed));
      }
      const created = await keys.createKey(principal, createInput(req.body), options);
      return json(200, { ok: true, id: created.id, key: created.key });
    }
    const rotating = path.endsWith(ROTATE);
    const usage = !rotating && path.endsWith(USAGE);
    let rawId: string;
    try {
      rawId = decodeURIComponent(path.slice(COLLECTION.length + 1, rotating ? -ROTATE.length : usage ? -USAGE.length : undefined));
    } catch {
      rawId = '';
    }
    // As the original's route pattern: anything but one UUID segment is no resource at all.
    if (!isUuid(rawId)) return json(404, errors('id', 'No such resource: the key id must be a UUID'));
    const allowed = rotating ? 'POST' : usage ? 'GET' : 'DELETE, PATCH';
    if (!allowed.split(', ').includes(req.method)) return json(405, errors('*', `Method ${req.method} not allowed`), { allow: allowed });
    keyId = rawId;
    const principal = await authenticated(keys, authorization, options);
    if (usage) return json(200, { id: rawId, usage: await keys.keyUsage(principal, rawId, daysOf(req.query), options) });
    if (rotating) {
      const rotated = await keys.rotateKey(principal, rawId, graceOf(req.body), options);
      return json(200, { ok: true, id: rotated.id, key: rotated.key, apiKey: listed(rotated.apiKey) });
    }
    if (req.method === 'PATCH') return json(200, listed(await keys.updateKey(principal, rawId, updateInput(req.body), options)));
    await keys.deleteKey(principal, rawId, options);
    return json(200, { result: 'DELETED', ok: true });
  } catch (error) {
    return apiKeyErrorResponse(error, authorization, keyId, req.log);
  }
}
