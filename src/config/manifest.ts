import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse } from 'graphql';

/** The TRUSTED_DOCUMENTS manifest (Apollo's or GraphQL Code Generator's format), read at start-up. */

export const MANIFEST_FORMAT = 'apollo-persisted-query-manifest';

export interface TrustedOperation {
  /** SHA-256 of body, lower-case hex. */
  id: string;
  name: string | null;
  body: string;
}

export interface TrustedDocumentsSettings {
  path: string;
  /** TRUSTED_DOCUMENTS_ONLY: refuse every operation that is not listed. */
  only: boolean;
  operations: ReadonlyMap<string, TrustedOperation>;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

class ManifestError extends Error {}

const oneLine = (message: string): string => message.replace(/\s+/g, ' ').trim();

/** The manifest's operations; throws with one line naming the problem. */
export function readManifest(path: string): Map<string, TrustedOperation> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? oneLine((error as Error).message)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`${path} is not JSON: ${oneLine((error as Error).message).slice(0, 200)}`);
  }
  try {
    return parseManifest(json);
  } catch (error) {
    if (error instanceof ManifestError) throw new Error(`${path}: ${error.message}`);
    throw error;
  }
}

export function parseManifest(json: unknown): Map<string, TrustedOperation> {
  if (!isRecord(json)) throw new ManifestError(`not a persisted-query manifest: expected a JSON object`);
  const entries: { where: string; id: unknown; name: unknown; body: unknown }[] = [];
  if ('format' in json || 'operations' in json) {
    if (json.format !== MANIFEST_FORMAT) throw new ManifestError(`format must be "${MANIFEST_FORMAT}", got ${JSON.stringify(json.format)}`);
    if (json.version !== 1) throw new ManifestError(`version must be 1, got ${JSON.stringify(json.version)}`);
    if (!Array.isArray(json.operations)) throw new ManifestError('operations must be a list');
    json.operations.forEach((operation: unknown, i) => {
      const fields = isRecord(operation) ? operation : {};
      const label = typeof fields.name === 'string' ? ` (${fields.name})` : '';
      entries.push({ where: `operations[${i}]${label}`, id: fields.id, name: fields.name ?? null, body: fields.body });
    });
  } else {
    // GraphQL Code Generator's client preset: {"<hash>": "<body>"}
    for (const [id, body] of Object.entries(json)) entries.push({ where: `operation ${JSON.stringify(id).slice(0, 80)}`, id, name: null, body });
  }

  const operations = new Map<string, TrustedOperation>();
  for (const { where, id, name, body } of entries) {
    if (typeof body !== 'string' || body.trim() === '') throw new ManifestError(`${where}: body must be a GraphQL document`);
    if (typeof id !== 'string') throw new ManifestError(`${where}: id must be a string`);
    const hash = sha256(body);
    if (id !== hash) throw new ManifestError(`${where}: id ${JSON.stringify(id).slice(0, 80)} is not the SHA-256 of its body (${hash})`);
    if (name !== null && typeof name !== 'string') throw new ManifestError(`${where}: name must be a string`);
    try {
      parse(body);
    } catch (error) {
      throw new ManifestError(`${where}: body does not parse: ${oneLine((error as Error).message)}`);
    }
    operations.set(id, { id, name, body });
  }
  return operations;
}
