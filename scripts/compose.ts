// `rover supergraph compose` offline (rover downloads its plugin): this gateway's subgraph and
// others' SDL files, through @apollo/composition, a devDependency since composing is a development
// step and a deployed gateway never composes. Usage: npm run -s compose -- --help
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, extname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { composeServices } from '@apollo/composition';
import { graphqlSync, parse } from 'graphql';
import { buildGatewaySchema } from '../src/graphql/schema/schema.js';

const HELP = `Usage: npm run -s compose -- <subgraph.graphql>... --routing-url <name>=<url>... [--recs-url <url>] [--output <file>]

Composes this gateway's subgraph ("recs", its SDL as _service { sdl } answers it) with the other
subgraphs' SDL files into a supergraph SDL, offline, with @apollo/composition (the version the
tests use). A subgraph is named after its file (products.graphql: products); --routing-url gives
each its URL, as rover's supergraph.yaml does. --recs-url is where the router reaches this gateway
(default http://localhost:4000/graphql). Without --output, the supergraph goes to standard output.
`;

/** A subgraph to compose: its name, where the router reaches it, and its SDL. */
export interface SubgraphSource {
  name: string;
  url: string;
  sdl: string;
}

/** This gateway's subgraph SDL: `_service { sdl }`, asked of its schema in this process. */
export function recsSubgraphSdl(): string {
  const { data, errors } = graphqlSync({ schema: buildGatewaySchema({ introspection: true }), source: '{ _service { sdl } }' });
  if (errors !== undefined) throw errors[0]!;
  return (data as { _service: { sdl: string } })._service.sdl;
}

/** The supergraph SDL of `subgraphs`, or the composition's errors, one message each. */
export function composeSupergraph(subgraphs: readonly SubgraphSource[]): { supergraphSdl: string } | { errors: string[] } {
  const services = [];
  for (const { name, url, sdl } of subgraphs) {
    try {
      services.push({ name, url, typeDefs: parse(sdl) });
    } catch (error) {
      return { errors: [`[${name}] ${(error as Error).message.split('\n')[0]}`] };
    }
  }
  const composed = composeServices(services);
  if (composed.errors !== undefined) return { errors: composed.errors.map((error) => error.message.replace(/\s+/g, ' ')) };
  return { supergraphSdl: composed.supergraphSdl };
}

/** The command line: returns the exit code (0 composed, 1 it does not compose or a file cannot be read, 2 usage). */
export function runCompose(argv: string[], io: { stdout: { write(text: string): unknown }; stderr: { write(text: string): unknown } }): number {
  const err = (line: string): void => void io.stderr.write(`${line}\n`);
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { 'routing-url': { type: 'string', multiple: true }, 'recs-url': { type: 'string' }, output: { type: 'string', short: 'o' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (error) {
    err(`${(error as Error).message.split('. ')[0]}; see npm run compose -- --help`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help === true) {
    io.stdout.write(HELP);
    return 0;
  }
  if (positionals.length === 0) {
    err('name the other subgraphs\' SDL files; see npm run compose -- --help');
    return 2;
  }
  const urls = new Map<string, string>();
  for (const pair of values['routing-url'] ?? []) {
    const at = pair.indexOf('=');
    if (at < 1) {
      err(`--routing-url takes <name>=<url>, got ${JSON.stringify(pair)}`);
      return 2;
    }
    urls.set(pair.slice(0, at), pair.slice(at + 1));
  }
  const subgraphs: SubgraphSource[] = [{ name: 'recs', url: values['recs-url'] ?? 'http://localhost:4000/graphql', sdl: recsSubgraphSdl() }];
  for (const file of positionals.map((p) => resolve(p))) {
    const name = basename(file, extname(file));
    const url = urls.get(name);
    if (url === undefined) {
      err(`${file}: no routing URL for the subgraph ${name}: add --routing-url ${name}=<url>`);
      return 2;
    }
    if (subgraphs.some((s) => s.name === name)) {
      err(`${file}: a subgraph named ${name} is given already (a subgraph is named after its file)`);
      return 2;
    }
    let sdl: string;
    try {
      sdl = readFileSync(file, 'utf8');
    } catch (error) {
      err(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
      return 1;
    }
    subgraphs.push({ name, url, sdl });
  }
  const composed = composeSupergraph(subgraphs);
  if ('errors' in composed) {
    for (const message of composed.errors) err(`does not compose: ${message}`);
    return 1;
  }
  if (values.output === undefined) io.stdout.write(composed.supergraphSdl);
  else {
    writeFileSync(values.output, composed.supergraphSdl);
    io.stdout.write(`${resolve(values.output)}: the supergraph of ${subgraphs.map((s) => s.name).join(', ')}\n`);
  }
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = runCompose(process.argv.slice(2), process);
}
