import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { CallerGone } from '../../../ports/callSignal.js';

/**
 * Passwords are kept as scrypt hashes in the form `scrypt$N$r$p$salt$hash`: the parameters
 * travel with each hash, so the cost can be raised later without breaking stored ones.
 */
export interface ScryptCost {
  N: number;
  r: number;
  p: number;
}

/**
 * One of OWASP's equivalent scrypt settings (N=2^15, r=8, p=3; 32 MiB): the same work as 2^17/8/1
 * at a quarter of the memory, so concurrent logins do not crowd the machine. About 0.4 s here.
 */
export const DEFAULT_COST: ScryptCost = { N: 2 ** 15, r: 8, p: 3 };

const KEY_LENGTH = 32;
const MAXMEM = 64 * 1024 * 1024;

/**
 * Password hashes computed at once, at most: one core fewer than the machine has (at least one).
 * Each takes a core for about 0.4 s in libuv's pool of four threads; unbounded, a burst of
 * sign-ins (the ten wrong passwords a minute an address may try, from many addresses) would take
 * every core, and every other request, cached answers included, would wait for them. Further
 * checks queue, first come first served; the login limits bound how many can queue.
 */
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
    // its callers gave up while it waited (a burst of sign-ins whose clients left): the slot goes
    // to the next in line at once, rather than to 0.3 s of a core for nobody
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

/**
 * What a user who does not exist is checked against, so that timing tells nothing: a stored hash
 * at the default cost whose salt and bytes are random (the check runs the same scrypt as for a
 * user, and fails). It was the hash of a random password, made at a process's first check: a
 * scrypt of its own, which the first sign-in waited for where one hash runs at a time (745 ms
 * against 310 ms on two cores) and which ran on after the answer where more do, for no one, and
 * kept the process from exiting until it ended (libuv's pool cannot drop a running job).
 */
const DECOY = ['scrypt', DEFAULT_COST.N, DEFAULT_COST.r, DEFAULT_COST.p, randomBytes(16).toString('base64'), randomBytes(KEY_LENGTH).toString('base64')].join('$');

/**
 * Whether `password` is the one `stored` hashes (the decoy's, so never, where stored is null).
 * `wanted`: asked when the check comes out of the queue; false skips it (CallerGone).
 */
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
