import { createHmac, hash, randomBytes } from 'node:crypto';
import type { PrincipalModel } from '../ports/backend.js';

/**
 * The Authorization header forms of the key service (upstream-facts.md): a key bare or after
 * Bearer, or Basic base64(user[@domain]:password). Parsing never touches a store, so a malformed
 * value is refused before any lookup.
 */
export type Credential =
  | { kind: 'key'; key: string }
  | { kind: 'password'; username: string; domain: string | null; password: string };

/** Basic credentials are strict base64 (upstream-facts.md). */
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * A key in its one canonical spelling: 16 bytes as standard base64, 22 characters whose last one
 * carries 2 bits and 4 zero bits (so it is A, Q, g or w), unpadded; or that same text followed by
 * `==`. Node's decoder (like Java's) ignores the unused bits and the padding, so every key would
 * otherwise have 48 spellings that all authenticate (16 last characters times no padding, `=`
 * and `==`), which lets a key escape anything that tells keys apart by their text.
 *
 * The padded twin is accepted because the real service accepts it: Concord hashes
 * SHA-256(Base64.getDecoder().decode(key)), and Java's basic decoder takes a final unit padded
 * with the right number of `=` (here two) and refuses a wrong number (`…A=`); a client written
 * against Concord that pads its key keeps working. The other 15 last characters Concord would
 * also take (Java ignores the unused bits too) are refused here: no key the service hands out is
 * spelled that way, so only a mangled or forged value would use them.
 */
const CANONICAL_KEY = /^[A-Za-z0-9+/]{21}[AQgw](?:==)?$/;

/** The longest header value considered at all: a key is 22 characters, credentials far less. */
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
  // no user is named with a NUL, and PostgreSQL refuses one in a query's text (a 500 a guess, uncounted)
  if (user.includes('\0')) return null;
  const password = decoded.slice(colon + 1);
  // a domain user signs in as user@domain, split at the first @
  const at = user.indexOf('@');
  const username = at === -1 ? user : user.slice(0, at);
  const domain = at === -1 ? null : user.slice(at + 1);
  if (username === '' || domain === '') return null;
  return { kind: 'password', username, domain, password };
}

/** The secret of this process's keyed hashes of password credentials: never stored, never shared. */
const PASSWORD_ID_SECRET = randomBytes(32);

/**
 * An id of a credential, hex, that tells credentials apart in cache keys without holding them.
 * A key (128 random bits) by its SHA-256, the same in every process, so processes can share what
 * they verified. A password credential by an HMAC under a secret of this process's own: an id
 * that leaked (a heap dump, a log) cannot be tried against a list of likely passwords.
 */
export function credentialId(authorization: string): string {
  const value = authorization.trim();
  if (value.length > 6 && (value.charCodeAt(0) | 0x20) === 0x62 && /^basic\s/i.test(value)) {
    return createHmac('sha256', PASSWORD_ID_SECRET).update(value).digest('hex');
  }
  // the one-shot hash: several times cheaper than createHash() for a short input, and this runs on every request
  return hash('sha256', value, 'hex');
}

/** What each open connection last sent as its Authorization value, and that value's credentialId. */
const lastOnConnection = new WeakMap<object, { authorization: string; id: string }>();

/**
 * credentialId, remembered on the connection: a keep-alive client sends the same value on every
 * request, and hashing it was most of what authenticating a verified key cost (BENCHMARKS.md,
 * "seventh pass"). A value that differs from the connection's last one in any way is hashed
 * afresh, so the requests of several users down one proxy connection are still told apart. Only
 * the last value is held, for as long as the socket lives (the WeakMap entry goes with it). The
 * comparison is not constant-time; through a shared proxy connection it sets a value against
 * another user's once per request of theirs, nanoseconds behind a network round trip. Without a
 * connection, credentialId.
 */
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

/**
 * A kept principal (what a cache of verified credentials holds, without the secret) with this
 * request's Authorization value. Written out field by field on purpose: on Node 20's V8,
 * `{ ...kept, authorization }` (a spread, then a property the source lacks) gives every object a
 * hidden class of its own, costs about 0.9 µs, and left the cached path's scavenges at 8 ms
 * instead of 1 (BENCHMARKS.md, "What each change bought").
 */
export function withAuthorization(kept: Omit<PrincipalModel, 'authorization'>, authorization: string): PrincipalModel {
  return { user: kept.user, authenticatedBy: kept.authenticatedBy, keyId: kept.keyId, credentialId: kept.credentialId, authorization };
}
