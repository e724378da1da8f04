import { createHash } from 'node:crypto';
import { badUserInput } from '../errors.js';
import type { ShopperModel } from '../ports/backend.js';
import { MAX_IDENTIFIER_LENGTH } from './ingest.js';

/** The shopper a recommendedForYou names: a sessionId, a userId or both, checked as events' ids are; BAD_USER_INPUT
 * naming the field otherwise, never echoing the id (it is the shopper's). */
export function toShopper(sessionId: string | null | undefined, userId: string | null | undefined): ShopperModel {
  const check = (value: string | null | undefined, field: string): string | null => {
    if (value === null || value === undefined) return null;
    if (typeof value !== 'string' || value.length === 0 || value.length > MAX_IDENTIFIER_LENGTH || value.includes('\u0000')) {
      throw badUserInput(`${field} must be 1 to ${MAX_IDENTIFIER_LENGTH} characters, without NUL`, field);
    }
    return value;
  };
  const shopper = { sessionId: check(sessionId, 'sessionId'), userId: check(userId, 'userId') };
  if (shopper.sessionId === null && shopper.userId === null) throw badUserInput('a sessionId or a userId is required', 'sessionId');
  return shopper;
}

/** The shopper as a cache key or a log may name it: a hash, never the ids. */
export function shopperKey(shopper: ShopperModel): string {
  return createHash('sha256').update(`${shopper.sessionId ?? ''}\u0000${shopper.userId ?? ''}\u0000${shopper.sessionId === null ? 0 : 1}`).digest('base64url').slice(0, 22);
}

/** The shopper as the REST twin's query parameters (sessionId, userId). */
export function shopperParameters(shopper: ShopperModel): [string, string][] {
  const out: [string, string][] = [];
  if (shopper.sessionId !== null) out.push(['sessionId', shopper.sessionId]);
  if (shopper.userId !== null) out.push(['userId', shopper.userId]);
  return out;
}
