import { createHmac, hash, randomBytes } from 'node:crypto';
import type { PrincipalModel } from '../ports/backend.js';

/** The key service's Authorization forms, parsed without touching a store so malformed values are refused first. */
export type Credential =
  | { kind: 'key'; key: string }
  | { kind: 'password'; username: string; domain: string | null; password: string };

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** A key in its one canonical spelling (or padded with `==`, as the real service accepts). Base64
 * decoders ignore unused bits and padding, so otherwise each key has many spellings that escape
 * anything telling keys apart by text. */
const CANONICAL_KEY = /^[A-Za-z0-9+/]{21}[AQgw](?:==)?$/;

const MAX_LENGTH = 1024;

export function parseAuthorization(value: string): Credential | null {
  const trimmed = value.trim();
  if (trimmed === '' || trimmed.length > MAX_LENGTH) return null;
  const space = trimmed.indexOf(' ');
  if (space === -1) {
    // a scheme with nothing after it is a malformed header, not a key that happens to be a word
    if (/^(bearer|basic)$/i.test(trimmed)) return null;
    return CANONICAL_KEY.test(trimmed) ? { kind: 'key', key: trimmed } : null;
  }

  const scheme = trimmed.slice(0, space).toLowerCase();
  const rest = trimmed.slice(space + 1).trim();
  if (scheme === 'bearer') return CANONICAL_KEY.test(rest) ? { kind: 'key', key: rest } : null;
  if (scheme !== 'basic' || !BASE64.test(rest)) return null;

  const decoded = Buffer.from(rest, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return null;
  const user = decoded.slice(0, colon);
  // PostgreSQL refuses a NUL in query text: a 500 for a guess, uncounted
  if (user.includes('\0')) return null;
  const password = decoded.slice(colon + 1);
  const at = user.indexOf('@');
  const username = at === -1 ? user : user.slice(0, at);
  const domain = at === -1 ? null : user.slice(at + 1);
  if (username === '' || domain === '') return null;
  return { kind: 'password', username, domain, password };
}

/** Secret of this process's keyed hashes of password credentials: never stored, never shared. */
const PASSWORD_ID_SECRET = randomBytes(32);

/** An id telling credentials apart in cache keys without holding them: a key by its SHA-256, shared
 * by processes; a password by an HMAC under a process secret, so a leaked id cannot be brute-forced. */
export function credentialId(authorization: string): string {
  const value = authorization.trim();
  if (value.length > 6 && (value.charCodeAt(0) | 0x20) === 0x62 && /^basic\s/i.test(value)) {
    return createHmac('sha256', PASSWORD_ID_SECRET).update(value).digest('hex');
  }
  // the one-shot hash: cheaper than createHash() for short input, on every request
  return hash('sha256', value, 'hex');
}

const lastOnConnection = new WeakMap<object, { authorization: string; id: string }>();

/** credentialId remembered on the connection, since keep-alive clients resend the same value; any
 * other value is hashed afresh, so users sharing a proxy connection are still told apart. */
export function connectionCredentialId(connection: object | undefined, authorization: string): string {
  if (connection === undefined) return credentialId(authorization);
  const last = lastOnConnection.get(connection);
  if (last !== undefined && last.authorization === authorization) return last.id;
  const id = credentialId(authorization);
  lastOnConnection.set(connection, { authorization, id });
  return id;
}

export function basicAuthorization(username: string, password: string, domain?: string | null): string {
  const user = domain ? `${username}@${domain}` : username;
  return `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
}

/** A kept principal with this request's Authorization, written field by field: a spread gives each object its own hidden class. */
export function withAuthorization(kept: Omit<PrincipalModel, 'authorization'>, authorization: string): PrincipalModel {
  return { user: kept.user, authenticatedBy: kept.authenticatedBy, keyId: kept.keyId, credentialId: kept.credentialId, authorization, scopes: kept.scopes, limits: kept.limits ?? null };
}
