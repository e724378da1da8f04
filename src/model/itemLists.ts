import { badUserInput, upstreamRejected } from '../errors.js';
import { RECS_SERVICE } from '../ports/backend.js';
import type { GatewayError } from '../errors.js';

/** At most this many characters a categoryPath asked for. */
export const MAX_CATEGORY_PATH = 1000;

/** A categoryPath as asked for (GraphQL argument or REST `category`), checked and without its outer slashes; null
 * for none. BAD_USER_INPUT, naming `field`, for one too long, empty, or with control characters. */
export function parseCategoryPath(value: string | null | undefined, field = 'categoryPath'): string | null {
  if (value === null || value === undefined) return null;
  if (value.length > MAX_CATEGORY_PATH) throw badUserInput(`${field} must be at most ${MAX_CATEGORY_PATH} characters`, field);
  if (/[\u0000-\u001f\u007f]/.test(value)) throw badUserInput(`${field} must not contain control characters`, field);
  const path = value.trim().replace(/^\/+|\/+$/g, '');
  if (path.replace(/[\s/]/g, '') === '') throw badUserInput(`${field} must name a category, e.g. Electronics/TV`, field);
  // an empty segment matches no record's path: refused rather than an empty list
  if (path.includes('//')) throw badUserInput(`${field} must not hold an empty segment (//)`, field);
  return path;
}

/** Whether `path` is `prefix` or lies under it, segment by segment. */
export function underCategory(path: string | null | undefined, prefix: string): boolean {
  if (path === null || path === undefined || !path.startsWith(prefix)) return false;
  return path.length === prefix.length || path.charCodeAt(prefix.length) === 0x2f;
}

/** Most items one trending or popular list holds, and its default. */
export const MAX_LIST_ITEMS = 50;
export const DEFAULT_LIST_ITEMS = 10;

/** A trending or popular list's `first`, 1..MAX_LIST_ITEMS (undefined or null: the default); BAD_USER_INPUT otherwise. */
export function checkListFirst(first: number | null | undefined, field = 'first'): number {
  const n = first ?? DEFAULT_LIST_ITEMS;
  if (!Number.isInteger(n) || n < 1 || n > MAX_LIST_ITEMS) throw badUserInput(`${field} must be from 1 to ${MAX_LIST_ITEMS}`, field);
  return n;
}

/** The error for a recommendations backend without trending or popular lists (an upstream older than them). */
export const listsLacking = (what: 'trending' | 'popular'): GatewayError =>
  upstreamRejected(RECS_SERVICE, `the recommendations backend lacks ${what} lists`);
