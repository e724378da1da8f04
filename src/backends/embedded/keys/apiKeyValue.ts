import { createHash, randomBytes } from 'node:crypto';

/** Key values as the real key service makes them (upstream-facts.md): 16 bytes from a CSPRNG,
 * standard base64 without padding (22 characters, 128 bits). Only SHA-256 of the decoded bytes
 * is stored, as base64 without padding. */
export function generateApiKey(): string {
  return randomBytes(16).toString('base64').replace(/=+$/, '');
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(Buffer.from(key, 'base64')).digest('base64').replace(/=+$/, '');
}

/** The name rule: 3 to 128 characters, a letter or digit first. */
export const KEY_NAME_RULE = /^[0-9a-zA-Z][0-9a-zA-Z_@.\-~]{2,127}$/;

export const KEY_NAME_RULE_TEXT =
  'a name has 3 to 128 characters: a letter or digit, then letters, digits, _, @, ., - or ~';

const DEFAULT_NAME = /^key#(\d{1,15})$/;

/** key#<n> with n one more than the highest such n among `names` (key#<count+1> would collide after a delete). */
export function nextDefaultName(names: Iterable<string>): string {
  let highest = 0;
  for (const name of names) {
    const match = DEFAULT_NAME.exec(name);
    if (match) highest = Math.max(highest, Number(match[1]));
  }
  return `key#${highest + 1}`;
}
