#!/usr/bin/env node
// The built command line (npm install builds dist/ through the prepare script).
let main;
try {
  ({ main } = await import('../dist/main.js'));
} catch (error) {
  // an install that skipped the build (--ignore-scripts) or a checkout never built: one line, not
  // node's stack of a module not found (a module missing inside dist/ is another matter: thrown)
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes(new URL('../dist/main.js', import.meta.url).pathname)) throw error;
  process.stderr.write('recs-gateway: the build is missing (dist/main.js): run `npm run build` (npm install runs it, unless scripts are off)\n');
  process.exit(1);
}

process.exitCode = await main(process.argv.slice(2));
