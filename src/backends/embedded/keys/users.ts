import { randomBytes } from 'node:crypto';
import { hashPassword, type ScryptCost } from './passwords.js';
import { UserExistsError, type KeyStore, type UserRecord } from './store.js';

const NAME = /^[^\s:@\x00-\x1f\x7f]{1,128}$/;
const DOMAIN = /^[^\s:@\x00-\x1f\x7f]{1,253}$/;
/** A control character: no user is named with one, and PostgreSQL's text takes no NUL. */
const CONTROL = /[\x00-\x1f\x7f]/;

/** What makes a username or domain to look up one no user can have (a control character: addUser
 * refuses them, and a NUL would fail PostgreSQL's query), as a message and the input's field; null otherwise. */
export function lookupProblem(username: string, domain: string | null): { message: string; field: 'username' | 'userDomain' } | null {
  if (CONTROL.test(username)) return { message: 'username holds a control character, which no username has', field: 'username' };
  if (domain !== null && CONTROL.test(domain)) return { message: 'userDomain holds a control character, which no domain has', field: 'userDomain' };
  return null;
}

export class UserInputError extends Error {}

export interface AddUser {
  username: string;
  domain?: string | null;
  password: string;
  isAdmin?: boolean;
}

/** Creates a user. A name holds no `:` (it ends the user part of Basic credentials) and no `@`
 * (it starts the domain); a password has at least 8 characters. */
export async function addUser(store: KeyStore, user: AddUser, cost?: ScryptCost): Promise<UserRecord> {
  if (!NAME.test(user.username)) throw new UserInputError('a username has 1 to 128 characters and no spaces, control characters, : or @');
  if (user.domain && !DOMAIN.test(user.domain)) throw new UserInputError('a domain has no spaces, control characters, : or @');
  if (user.password.length < 8) throw new UserInputError('a password has at least 8 characters');
  try {
    return await store.createUser({
      username: user.username,
      domain: user.domain || null,
      passwordHash: await hashPassword(user.password, cost),
      isAdmin: user.isAdmin ?? false,
    });
  } catch (error) {
    if (error instanceof UserExistsError) {
      throw new UserInputError(`the user ${user.domain ? `${user.username}@${user.domain}` : user.username} exists`);
    }
    throw error;
  }
}

/** On the very first start, with no users at all, creates the administrator `admin` with a random
 * password and returns that password (to be shown once); returns null otherwise. Two processes
 * starting at once on one PostgreSQL make one admin: the loser's insert hits the unique index. */
export async function ensureFirstAdmin(store: KeyStore): Promise<string | null> {
  if ((await store.countUsers()) > 0) return null;
  const password = randomBytes(18).toString('base64url');
  try {
    await addUser(store, { username: 'admin', password, isAdmin: true });
    return password;
  } catch (error) {
    if (error instanceof UserInputError) return null;
    throw error;
  }
}

/** The user named `username` (and `domain`), or UserInputError naming who was not found. */
async function existingUser(store: KeyStore, username: string, domain: string | null): Promise<UserRecord> {
  const problem = lookupProblem(username, domain);
  const user = problem === null ? await store.findUser(username, domain || null) : null;
  if (user === null) throw new UserInputError(`no user ${domain ? `${username}@${domain}` : username}`);
  return user;
}

/** Sets a user's password; sign-ins with the old one stop on every gateway of the store (its data version moves). */
export async function changePassword(store: KeyStore, username: string, domain: string | null, password: string, cost?: ScryptCost): Promise<UserRecord> {
  if (password.length < 8) throw new UserInputError('a password has at least 8 characters');
  const user = await existingUser(store, username, domain);
  if (!(await store.setPasswordHash(user.id, await hashPassword(password, cost)))) throw new UserInputError(`no user ${username}`);
  return user;
}

/** Removes a user and its keys; the count of keys removed. The last administrator stays: no one could add users back. */
export async function removeUser(store: KeyStore, username: string, domain: string | null): Promise<{ user: UserRecord; keys: number }> {
  const user = await existingUser(store, username, domain);
  if (user.isAdmin && (await store.listUsers()).filter((other) => other.isAdmin).length === 1) {
    throw new UserInputError(`${username} is the only administrator: add another (user add --admin) before removing it`);
  }
  const keys = await store.deleteUser(user.id);
  if (keys === null) throw new UserInputError(`no user ${username}`);
  return { user, keys };
}
