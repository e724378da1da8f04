import { badUserInput, forbidden } from '../errors.js';
import { MAX_KEY_DAILY_QUOTA, MAX_KEY_RATE_PER_SECOND, type KeyLimits, type PrincipalModel } from '../ports/backend.js';

type LimitField = keyof KeyLimits;

const BOUNDS: Record<LimitField, number> = { rateLimitPerSecond: MAX_KEY_RATE_PER_SECOND, dailyQuota: MAX_KEY_DAILY_QUOTA };

/** A limit as asked for: undefined (omitted), null (none), or a whole number within its bounds; BAD_USER_INPUT otherwise. */
export function parseLimit(value: unknown, field: LimitField): number | null | undefined {
  if (value === undefined || value === null) return value;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > BOUNDS[field]) {
    throw badUserInput(`${field} must be a whole number from 1 to ${BOUNDS[field]}, or null for none`, field);
  }
  return value;
}

/** A caller authenticated by a key with limits of its own gives no key more than those: it may lower
 * its own limits, never raise them, nor escape them through a key it makes. Passwords and
 * administrators are not bound. `asked` null is "none", which is more than any limit. */
export function checkLimitGrant(maker: Pick<PrincipalModel, 'authenticatedBy' | 'limits' | 'user'>, field: LimitField, asked: number | null): void {
  if (maker.authenticatedBy !== 'API_KEY' || maker.user.isAdmin) return;
  const own = maker.limits?.[field] ?? null;
  if (own !== null && (asked === null || asked > own)) {
    throw forbidden(`A key may give no key a ${field} above its own (${own}): ask with a password, or an administrator`);
  }
}

/** The limits of a key made by `maker`: those asked for, else (omitted) the maker key's own. */
export function grantableLimits(
  maker: Pick<PrincipalModel, 'authenticatedBy' | 'limits' | 'user'>, input: { rateLimitPerSecond?: unknown; dailyQuota?: unknown },
): KeyLimits {
  const limits = {} as KeyLimits;
  for (const field of ['rateLimitPerSecond', 'dailyQuota'] as const) {
    const asked = parseLimit(input[field], field);
    const bound = maker.authenticatedBy === 'API_KEY' && !maker.user.isAdmin ? (maker.limits?.[field] ?? null) : null;
    limits[field] = asked === undefined ? bound : asked;
    checkLimitGrant(maker, field, limits[field]);
  }
  return limits;
}

/** A UTC day as YYYY-MM-DD. */
export const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** Milliseconds from `ms` to the next UTC midnight. */
export const msToUtcMidnight = (ms: number): number => 86_400_000 - (ms % 86_400_000);
