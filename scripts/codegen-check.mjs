// Regenerates the resolver types into a temporary copy and fails, with a hint, when the
// committed file differs: the schema changed without `npm run codegen`.
import { readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

const file = 'src/__generated__/resolvers-types.ts';
const before = readFileSync(file, 'utf8');
try {
  execFileSync('npx', ['graphql-codegen', '--config', 'codegen.ts', '--silent'], { stdio: 'inherit' });
  const after = readFileSync(file, 'utf8');
  if (after !== before) {
    writeFileSync(file, before);
    console.error(`${file} is out of date with schema/: run \`npm run codegen\` and commit the result.`);
    process.exit(1);
  }
  console.log(`${file} is up to date.`);
} catch (error) {
  writeFileSync(file, before);
  throw error;
}
