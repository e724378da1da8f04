import { describe, expect, it } from 'vitest';
import { connectionCredentialId, credentialId, parseAuthorization } from '../../../../src/auth/authorization.js';
import { generateApiKey, hashApiKey, KEY_NAME_RULE, nextDefaultName } from '../../../../src/backends/embedded/keys/apiKeyValue.js';

describe('key values', () => {
  it('hashes the test vector of upstream-facts.md', () => {
    expect(hashApiKey('AAECAwQFBgcICQoLDA0ODw')).toBe('vkXLJgW/Nr695oSEGijw/UPGmFCj3OX+26aZKO46iZE');
  });

  it('makes 22-character unpadded base64 keys of 16 random bytes', () => {
    const keys = new Set(Array.from({ length: 200 }, generateApiKey));
    expect(keys.size).toBe(200);
    for (const key of keys) {
      expect(key).toMatch(/^[A-Za-z0-9+/]{22}$/);
      expect(Buffer.from(key, 'base64')).toHaveLength(16);
    }
  });

  it('names a default key one more than the highest key#<n>, not the count', () => {
    expect(nextDefaultName([])).toBe('key#1');
    expect(nextDefaultName(['key#1', 'key#3', 'mine'])).toBe('key#4');
    expect(nextDefaultName(['key#x', 'key#', 'key#02'])).toBe('key#3');
  });

  it.each([
    ['abc', true],
    ['a'.repeat(128), true],
    ['a'.repeat(129), false],
    ['ab', false],
    ['_abc', false],
    ['my-key_1@home.example~x', true],
    ['key#1', false],
    ['has space', false],
    ['ünï', false],
  ])('name rule: %s -> %s', (name, ok) => {
    expect(KEY_NAME_RULE.test(name)).toBe(ok);
  });
});

describe('Authorization header', () => {
  const basic = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;

  it('reads a bare key and a Bearer key', () => {
    expect(parseAuthorization('AAECAwQFBgcICQoLDA0ODw')).toEqual({ kind: 'key', key: 'AAECAwQFBgcICQoLDA0ODw' });
    expect(parseAuthorization('Bearer AAECAwQFBgcICQoLDA0ODw')).toEqual({ kind: 'key', key: 'AAECAwQFBgcICQoLDA0ODw' });
    expect(parseAuthorization('bearer  AAECAwQFBgcICQoLDA0ODw ')).toEqual({ kind: 'key', key: 'AAECAwQFBgcICQoLDA0ODw' });
  });

  it('reads a key padded with == (the real service decodes it), as the same key bytes', () => {
    const padded = parseAuthorization('AAECAwQFBgcICQoLDA0ODw==');
    expect(padded).toEqual({ kind: 'key', key: 'AAECAwQFBgcICQoLDA0ODw==' });
    expect(hashApiKey('AAECAwQFBgcICQoLDA0ODw==')).toBe(hashApiKey('AAECAwQFBgcICQoLDA0ODw'));
  });

  it.each(['AAECAwQFBgcICQoLDA0ODx', 'AAECAwQFBgcICQoLDA0OD/', 'AAECAwQFBgcICQoLDA0ODw=', 'Bearer AAECAwQFBgcICQoLDA0ODx==', 'AAECAwQFBgcICQoLDA0O', 'AAECAwQFBgcICQoLDA0ODwA'])(
    'refuses the non-canonical key spelling %j',
    (value) => {
      expect(parseAuthorization(value)).toBeNull();
    },
  );

  it('reads Basic credentials, splitting a domain user at the first @', () => {
    expect(parseAuthorization(basic('alice:s3cret:with:colons'))).toEqual({
      kind: 'password',
      username: 'alice',
      domain: null,
      password: 's3cret:with:colons',
    });
    expect(parseAuthorization(basic('bob@corp.example@x:pw'))).toEqual({
      kind: 'password',
      username: 'bob',
      domain: 'corp.example@x',
      password: 'pw',
    });
  });

  it.each(['', 'not a key!', 'Bearer ', 'Bearer a-b', 'Digest abc', basic('nocolon'), basic(':pw'), basic('@d:pw'), 'x'.repeat(2000), 'AAEC==='])(
    'refuses %j before any lookup',
    (value) => {
      expect(parseAuthorization(value)).toBeNull();
    },
  );

  it('identifies credentials by hash, never holding them', () => {
    const id = credentialId('AAECAwQFBgcICQoLDA0ODw');
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    expect(id).not.toContain('AAEC');
  });

  it("remembers a connection's last credential id, and only for the value that connection sent", () => {
    const [one, two] = [{}, {}];
    const a = 'Bearer AAECAwQFBgcICQoLDA0ODw';
    const b = 'Bearer AAECAwQFBgcICQoLDA0OEA';
    expect(connectionCredentialId(one, a)).toBe(credentialId(a));
    // an equal value read afresh from the socket: the id kept, the very same string
    const again = connectionCredentialId(one, `Bearer ${'AAECAwQFBgcICQoLDA0ODw'}`);
    expect(again).toBe(credentialId(a));
    // another value on the same connection, then the first again: each gets its own id
    expect(connectionCredentialId(one, b)).toBe(credentialId(b));
    expect(connectionCredentialId(one, a)).toBe(credentialId(a));
    // another connection knows nothing of the first one's values
    expect(connectionCredentialId(two, b)).toBe(credentialId(b));
    expect(connectionCredentialId(one, a)).toBe(credentialId(a));
    expect(connectionCredentialId(two, ` ${b} `)).toBe(credentialId(b));
  });
});
