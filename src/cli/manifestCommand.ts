import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Kind, parse, print, validate, visit, type DefinitionNode, type DocumentNode, type FragmentDefinitionNode, type OperationDefinitionNode } from 'graphql';
import { MANIFEST_FORMAT } from '../config/manifest.js';
import { systemReason } from '../backends/embedded/dataFiles.js';
import { argsProblem, usageProblem } from './commandArgs.js';

export const MANIFEST_HELP = `Usage: recs-gateway manifest <file or directory>... [--output <file>]

Writes the trusted-documents manifest TRUSTED_DOCUMENTS reads (Apollo's persisted-query manifest,
${MANIFEST_FORMAT} version 1) from the operations in .graphql and .gql files (a directory is
searched whole). Each named operation becomes one entry: its body the operation and the fragments
it spreads, printed by graphql-js, its id the SHA-256 of that body. Every operation is checked
against the gateway's schema first; a fragment may be defined in any of the files. Without
--output, the manifest goes to standard output. Offline: nothing is downloaded.
`;

/** An operation or fragment problem, as one line. */
class DocumentsError extends Error {}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The .graphql and .gql files of `path` (a file, or a directory searched whole), sorted. */
function documentFiles(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  const files: string[] = [];
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const child = join(path, entry.name);
    if (entry.isDirectory()) files.push(...documentFiles(child));
    else if (/\.(graphql|gql)$/.test(entry.name)) files.push(child);
  }
  return files.sort();
}

/** The fragments an operation spreads, directly or through other fragments, in the order first met. */
function spreadFragments(root: DefinitionNode, fragments: ReadonlyMap<string, FragmentDefinitionNode>, where: string): FragmentDefinitionNode[] {
  const used: FragmentDefinitionNode[] = [];
  const seen = new Set<string>();
  const walk = (node: DefinitionNode): void => {
    visit(node, {
      FragmentSpread(spread) {
        const name = spread.name.value;
        if (seen.has(name)) return;
        const fragment = fragments.get(name);
        if (fragment === undefined) throw new DocumentsError(`${where}: fragment ${name} is not defined in any of the files`);
        seen.add(name);
        used.push(fragment);
        walk(fragment);
      },
    });
  };
  walk(root);
  return used;
}

/** The manifest's operations from the documents of `files`; throws a DocumentsError naming the first problem. */
export async function manifestOf(files: readonly string[]): Promise<{ id: string; name: string; type: string; body: string }[]> {
  const operations: { operation: OperationDefinitionNode; where: string }[] = [];
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new DocumentsError(`cannot read ${file}: ${systemReason(error)}`);
    }
    // a file of comments alone (a placeholder) holds nothing, which parse calls a syntax error
    if (text.replace(/#[^\n]*/g, '').trim() === '') continue;
    let document: DocumentNode;
    try {
      document = parse(text);
    } catch (error) {
      throw new DocumentsError(`${file}: ${(error as Error).message.split('\n')[0]}`);
    }
    for (const definition of document.definitions) {
      if (definition.kind === Kind.FRAGMENT_DEFINITION) {
        if (fragments.has(definition.name.value)) throw new DocumentsError(`${file}: fragment ${definition.name.value} is defined twice`);
        fragments.set(definition.name.value, definition);
      } else if (definition.kind === Kind.OPERATION_DEFINITION) {
        // a client finds an operation's id by its name
        if (definition.name === undefined) throw new DocumentsError(`${file}: every operation needs a name (an anonymous ${definition.operation} cannot be looked up)`);
        operations.push({ operation: definition, where: `${file}: ${definition.operation} ${definition.name.value}` });
      } else {
        throw new DocumentsError(`${file}: only operations and fragments belong in a client's documents`);
      }
    }
  }
  if (operations.length === 0) throw new DocumentsError(`no operation in ${files.length} file${files.length === 1 ? '' : 's'}`);
  const { buildGatewaySchema } = await import('../graphql/schema/schema.js');
  const schema = buildGatewaySchema({ introspection: true });
  const seen = new Set<string>();
  return operations
    .map(({ operation, where }) => {
      const name = operation.name!.value;
      if (seen.has(name)) throw new DocumentsError(`${where}: another operation has this name`);
      seen.add(name);
      const document: DocumentNode = { kind: Kind.DOCUMENT, definitions: [operation, ...spreadFragments(operation, fragments, where)] };
      const [invalid] = validate(schema, document);
      if (invalid !== undefined) throw new DocumentsError(`${where}: ${invalid.message}`);
      const body = print(document);
      return { id: sha256(body), name, type: operation.operation, body };
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** `manifest <paths>`: returns the exit code (0 written, 1 failed, 2 usage). */
export async function runManifest(argv: string[], io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream }): Promise<number> {
  const err = (line: string): void => void io.stderr.write(`${line}\n`);
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: { output: { type: 'string', short: 'o' }, help: { type: 'boolean', short: 'h' } } });
  } catch (error) {
    err(argsProblem(error, 'manifest') ?? (error as Error).message);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help === true) {
    io.stdout.write(MANIFEST_HELP);
    return 0;
  }
  if (positionals.length === 0) {
    err(usageProblem('name the .graphql files or directories of the operations', 'manifest'));
    return 2;
  }
  try {
    const files: string[] = [];
    for (const path of positionals.map((p) => resolve(p))) {
      try {
        files.push(...documentFiles(path));
      } catch (error) {
        throw new DocumentsError(`cannot read ${path}: ${systemReason(error)}`);
      }
    }
    const operations = await manifestOf(files);
    const text = `${JSON.stringify({ format: MANIFEST_FORMAT, version: 1, operations }, null, 2)}\n`;
    if (values.output === undefined) {
      io.stdout.write(text);
      return 0;
    }
    const output = resolve(values.output);
    try {
      writeFileSync(output, text);
    } catch (error) {
      throw new DocumentsError(`cannot write ${output}: ${systemReason(error)}`);
    }
    io.stdout.write(`${output}: ${operations.length} operation${operations.length === 1 ? '' : 's'} (${operations.map((o) => o.name).join(', ')}); start with TRUSTED_DOCUMENTS=${output}\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof DocumentsError)) throw error;
    err(`recs-gateway: ${error.message}`);
    return 1;
  }
}
