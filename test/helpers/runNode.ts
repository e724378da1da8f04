import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { RunResult } from './processes.js';

const ROOT = new URL('../../', import.meta.url).pathname;

/**
 * Runs node with `args` in the repository and waits for it to end: what the user of a script or
 * of the built command line sees. `user` runs it as another user (needs root); `cleanEnv` gives
 * it PATH and `env` only, not this process's environment.
 */
export async function runNode(
  args: string[],
  options: { env?: Record<string, string>; user?: { uid?: number; gid?: number }; cleanEnv?: boolean } = {},
): Promise<RunResult> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: options.cleanEnv ? { PATH: process.env.PATH ?? '', ...options.env } : { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...options.user,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}
