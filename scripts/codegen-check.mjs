// Regenerates each committed output of codegen and fails, with a hint, when one differs: the
// schema (or an example client's operations) changed without `npm run codegen`.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const targets = [
  { config: 'codegen.ts', output: 'src/__generated__/resolvers-types.ts' },
  { config: 'examples/client/codegen.ts', output: 'examples/client/src/gql' },
];

/** The files of an output (one file, or every file below a folder), by path, with their text. */
function snapshot(output) {
  const files = new Map();
  const walk = (entry) => {
    let names;
    try {
      names = readdirSync(entry, { withFileTypes: true });
    } catch (error) {
      if (error.code === 'ENOTDIR') return files.set(entry, readFileSync(entry, 'utf8'));
      if (error.code === 'ENOENT') return undefined;
      throw error;
    }
    for (const name of names) walk(path.join(entry, name.name));
  };
  walk(output);
  return files;
}

function restore(before, output) {
  for (const file of snapshot(output).keys()) if (!before.has(file)) rmSync(file);
  for (const [file, text] of before) writeFileSync(file, text);
}

let stale = 0;
for (const { config, output } of targets) {
  const before = snapshot(output);
  try {
    execFileSync('npx', ['graphql-codegen', '--config', config, '--silent'], { stdio: 'inherit' });
  } catch (error) {
    restore(before, output);
    throw error;
  }
  const after = snapshot(output);
  const changed = [...new Set([...before.keys(), ...after.keys()])].filter((file) => before.get(file) !== after.get(file));
  if (changed.length > 0) {
    restore(before, output);
    console.error(`${changed.join(', ')} out of date with schema/ (${config}): run \`npm run codegen\` and commit the result.`);
    stale += 1;
  } else {
    console.log(`${output} is up to date.`);
  }
}
if (stale > 0) process.exit(1);
