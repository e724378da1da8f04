import { describe, expect, it } from 'vitest';
import { GATEWAY_ARGS } from '../helpers/processes.js';
import { runNode } from '../helpers/runNode.js';

// A module hook that names every file module loaded, on stderr (node's own modules are left out).
const HOOK = `export async function load(url, context, next) {
  if (url.startsWith('file:')) process.stderr.write('loaded ' + url + '\\n');
  return next(url, context);
}`;
const REGISTER = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOK)}`)});`;

/** The files the command line loads for `args`, and what it printed. */
async function loadedBy(args: string[], env: Record<string, string> = {}) {
  const result = await runNode(['--import', `data:text/javascript,${encodeURIComponent(REGISTER)}`, ...GATEWAY_ARGS, ...args], {
    env: { LOG_LEVEL: 'warn', ...env },
  });
  const loaded = [...result.stderr.matchAll(/^loaded (.*)$/gm)].map((match) => match[1]!);
  return { ...result, loaded };
}

describe('the command line loads nothing heavy to answer --help', () => {
  it.each([[['--help']], [['serve', '--help']], [['user', 'add', '--help']], [[]]])('recs-gateway %j', async (args) => {
    const { loaded, stdout, code } = await loadedBy(args);
    expect(stdout).toContain('Usage: recs-gateway');
    expect(code).toBe(args.length === 0 ? 2 : 0);
    // the hook saw the command line itself, so it was listening
    expect(loaded.some((url) => url.endsWith('/dist/main.js'))).toBe(true);
    // no package (graphql, pino, ioredis, Apollo Server), no configuration, no server
    expect(loaded.filter((url) => url.includes('/node_modules/'))).toEqual([]);
    expect(loaded.filter((url) => /\/dist\/(config|server|logger|startup)\.js$/.test(url))).toEqual([]);
  }, 30_000);

  it('loads the configuration for a command that runs, and reports a bad setting as before', async () => {
    const { loaded, stderr, code } = await loadedBy(['serve'], { PORT: 'eighty' });
    expect(code).toBe(2);
    expect(stderr).toContain('PORT must be a whole number from 0 to 65535, got "eighty"');
    expect(loaded.some((url) => url.endsWith('/dist/config/env.js'))).toBe(true);
  }, 30_000);
});
