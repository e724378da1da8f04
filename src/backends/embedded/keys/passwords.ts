import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { CallerGone } from '../../../shared/callSignal.js';

/** Passwords are kept as scrypt hashes in the form `scrypt$N$r$p$salt$hash`: the parameters
 * travel with each hash, so the cost can be raised later without breaking stored ones. */
export interface ScryptCost {
  N: number;
  r: number;
  p: number;
}

/** One of OWASP's equivalent scrypt settings, the one with the least memory: concurrent logins do not crowd the machine. */
export const DEFAULT_COST: ScryptCost = { N: 2 ** 15, r: 8, p: 3 };

const KEY_LENGTH = 32;
const MAXMEM = 64 * 1024 * 1024;

/** Password hashes computed at once, at most: one core fewer than the machine has, so that a burst
 * of sign-ins cannot take every core from other requests; further checks queue. */
export const SCRYPT_CONCURRENCY = Math.max(1, availableParallelism() - 1);

let running = 0;
let peak = 0;
let runs = 0;
const waiting: (() => void)[] = [];

/** The most password hashes that ran at once so far (tests). */
export function scryptPeakConcurrency(): number {
  return peak;
}

/** Password checks waiting for a slot now (tests). */
export function scryptWaiting(): number {
  return waiting.length;
}

/** The password hashes run so far (tests). */
export function scryptRuns(): number {
  return runs;
}

/** Hands a finished (or skipped) hash's slot to the next in line (running stays), so none can jump the queue. */
function release(): void {
  const next = waiting.shift();
  if (next !== undefined) next();
  else running -= 1;
}

async function scrypt(password: string, salt: Buffer, keyLength: number, options: ScryptOptions, wanted?: () => boolean): Promise<Buffer> {
  if (running < SCRYPT_CONCURRENCY) running += 1;
  else {
    await new Promise<void>((resolve) => waiting.push(resolve));
    // its callers gave up while it waited: the slot goes to the next in line, not to work for nobody
    if (wanted !== undefined && !wanted()) {
      release();
      throw new CallerGone('a password check');
    }
  }
  peak = Math.max(peak, running);
  runs += 1;
  try {
    return await new Promise((resolve, reject) => {
      scryptCallback(password, salt, keyLength, options, (error, key) => (error ? reject(error) : resolve(key)));
    });
  } finally {
    release();
  }
}

/** Hashes a password; tests pass a cheaper cost to stay fast. */
export async function hashPassword(password: string, cost: ScryptCost = DEFAULT_COST): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, KEY_LENGTH, { ...cost, maxmem: MAXMEM });
  return ['scrypt', cost.N, cost.r, cost.p, salt.toString('base64'), hash.toString('base64')].join('$');
}

/** What an unknown user is checked against, so that timing tells nothing: random salt and bytes at
 * the default cost, made without a scrypt of its own. */
const DECOY = ['scrypt', DEFAULT_COST.N, DEFAULT_COST.r, DEFAULT_COST.p, randomBytes(16).toString('base64'), randomBytes(KEY_LENGTH).toString('base64')].join('$');

/** Whether `password` is the one `stored` hashes (the decoy's, so never, where stored is null).
 * `wanted`: asked when the check comes out of the queue; false skips it (CallerGone). */
export async function verifyPassword(password: string, stored: string | null, wanted?: () => boolean): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = (stored ?? DECOY).split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scrypt(password, Buffer.from(salt, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: MAXMEM,
  }, wanted);
  return stored !== null && timingSafeEqual(actual, expected);
}
