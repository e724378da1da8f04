import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { createInterface } from 'node:readline';

const ROOT = new URL('../../', import.meta.url).pathname;

/** The environment that turns the rate limits off, for tests whose subject is something else. */
export const NO_RATE_LIMITS = { RATE_LIMIT_RPS: '0', AUTH_FAILURES_PER_MINUTE: '0', NEW_DOCUMENTS_RPS: '0' } as const;

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** How long runCli lets a command run before it kills it (a hung start fails its test, and leaves nothing running). */
const CLI_DEADLINE_MS = 60_000;

/** The built command line as `npm start` runs it (vitest's global setup builds dist/ before the tests). */
export const GATEWAY_ARGS = ['--no-memory-reducer', 'bin/recs-gateway.js'] as const;

/** Runs the built command line and waits for it to end: SIGKILL past CLI_DEADLINE_MS. */
export async function runCli(args: string[], env: Record<string, string>, input?: string): Promise<RunResult> {
  const child = spawn(process.execPath, [...GATEWAY_ARGS, ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(input ?? '');
  const deadline = setTimeout(() => child.kill('SIGKILL'), CLI_DEADLINE_MS);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(deadline);
  return { code, stdout, stderr };
}

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  /** What the process wrote to stderr so far (the first-start admin password, say). */
  stderr(): string;
  /** Its log lines (stdout) so far. */
  stdout(): string;
  /** SIGTERM, then wait for the exit; resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** A port nothing listens on now, for a gateway whose address is needed before it logs it. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts `recs-gateway serve` as `npm start` runs it, from dist/, on a free port and waits until
 * it is ready (its backend open), or only until it listens with `until: 'listening'` (it answers
 * /healthz then, and 503 to everything else until ready; it is found by its /healthz on a port
 * chosen here, as its `recs-gateway listening` line waits for the whole start). `npm`: `npm start`
 * itself, the README's command, in a process group of its own as a terminal's job is: the child is npm.
 */
export async function startServe(env: Record<string, string>, options: { npm?: boolean; until?: 'listening' | 'ready' } = {}): Promise<ServeProcess> {
  const port = options.until === 'listening' ? (env.PORT ?? String(await freePort())) : undefined;
  const healthz = port === undefined ? null : `http://127.0.0.1:${port}`;
  const child = spawn(options.npm ? 'npm' : process.execPath, options.npm ? ['start'] : [...GATEWAY_ARGS, 'serve'], {
    cwd: ROOT,
    // rate limits are tested where they are the subject; elsewhere they would only throttle the test
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      ...NO_RATE_LIMITS,
      ...env,
      ...(port === undefined ? {} : { PORT: port }),
      ...(options.npm ? { npm_config_update_notifier: 'false' } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.npm === true,
  });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit');
  const url = await new Promise<string>((resolve, reject) => {
    // a bound against a hang, not a measure of start-up, for a 2-core machine that runs a second
    // test suite; the tests' own timeouts are 90 and 120 s
    let waiting = true;
    const timer = setTimeout(() => {
      waiting = false;
      reject(new Error(`serve did not start: ${stderr}`));
    }, 80_000);
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
    if (healthz !== null) {
      const poll = (): void => {
        fetch(`${healthz}/healthz`).then(
          (response) => {
            void response.body?.cancel();
            if (response.status !== 200) throw new Error(`healthz ${response.status}`);
            clearTimeout(timer);
            resolve(healthz);
          },
        ).catch(() => {
          if (waiting && child.exitCode === null) setTimeout(poll, 50);
        });
      };
      poll();
    }
    createInterface({ input: child.stdout }).on('line', (line) => {
      stdout += `${line}\n`;
      try {
        const entry = JSON.parse(line) as { msg?: string; url?: string };
        if (healthz === null && entry.msg === 'recs-gateway ready' && entry.url) {
          clearTimeout(timer);
          resolve(entry.url.replace(/\/graphql$/, ''));
        }
      } catch {
        // not a log line
      }
    });
  });
  return {
    child,
    url,
    stderr: () => stderr,
    stdout: () => stdout,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const [code] = (await exited) as [number | null];
      return code;
    },
  };
}

export async function gql(
  url: string,
  query: string,
  variables: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: { data?: Record<string, Record<string, unknown>> | null; errors?: { extensions?: { code?: string } }[] } }> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as never };
}

/**
 * The administrator's Basic credentials a first `serve` on an empty store printed (its password,
 * shown that once on stderr); throws when it printed none (not the first start).
 */
export function firstAdmin(first: ServeProcess): string {
  const password = /password\n\n\s+(\S+)/.exec(first.stderr())?.[1];
  if (password === undefined) throw new Error(`serve printed no first administrator's password:\n${first.stderr()}`);
  return `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`;
}

/** An API key named `name` made through the gateway at `url` by `authorization`; throws when none came back. */
export async function createKey(url: string, authorization: string, name: string): Promise<string> {
  const created = await gql(url, 'mutation($n: String!) { createApiKey(input: { name: $n }) { key } }', { n: name }, { authorization });
  const key = (created.body.data?.createApiKey as { key?: string } | undefined)?.key;
  if (key === undefined || key === '') throw new Error(`no key created: ${JSON.stringify(created.body)}`);
  return key;
}
