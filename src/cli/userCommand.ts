import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import type { Config } from '../config/env.js';
import type { KeyStore, UserRecord } from '../backends/embedded/keys/store.js';

export const USER_USAGE = `Usage: recs-gateway user <subcommand> [options]

Manages the users of the embedded key store (DATA_DIR/keys.db, or DATABASE_URL). A change takes
effect at once on every gateway sharing the store. A domain user signs in as <username>@<domain>.

  user add <username> [--domain <domain>] [--admin] [--password <password>]
                       create a user; the password from standard input unless --password
  user passwd <username> [--domain <domain>]
                       set a new password, read from standard input
  user remove <username> [--domain <domain>]
                       remove a user and every key of theirs
  user list            every user: name, role, creation time and id
`;

export interface UserIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: Record<string, string | undefined>;
}

const nameOf = (user: Pick<UserRecord, 'username' | 'domain'>): string => (user.domain ? `${user.username}@${user.domain}` : user.username);

/** `recs-gateway user ...`: the exit code. */
export async function runUser(argv: string[], io: UserIo): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === '--help' || sub === '-h') {
    io.stdout.write(USER_USAGE);
    return 0;
  }
  if (sub !== 'add' && sub !== 'passwd' && sub !== 'remove' && sub !== 'list') {
    io.stderr.write(`${sub === undefined ? '' : `unknown subcommand: ${sub}\n\n`}${USER_USAGE}`);
    return 2;
  }
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      domain: { type: 'string' },
      admin: { type: 'boolean', default: false },
      password: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    io.stdout.write(USER_USAGE);
    return 0;
  }
  // --admin and --password belong to add alone; a password on the command line is seen by `ps`
  const misplaced = sub !== 'add' && (values.admin || values.password !== undefined);
  if (positionals.length !== (sub === 'list' ? 0 : 1) || misplaced || (sub === 'list' && values.domain !== undefined)) {
    io.stderr.write(USER_USAGE);
    return 2;
  }
  const [{ loadConfig }, users] = await Promise.all([import('../config/env.js'), import('../backends/embedded/keys/users.js')]);
  const config: Config = loadConfig(io.env);
  const username = positionals[0]!;
  const domain = values.domain ?? null;
  const password = sub === 'add' ? (values.password ?? (await readPassword(io))) : sub === 'passwd' ? await readPassword(io) : '';
  const { openKeyStore } = await import('../backends/embedded/keys/index.js');
  const store: KeyStore = await openKeyStore(config);
  try {
    switch (sub) {
      case 'add': {
        const created = await users.addUser(store, { username, domain, password, isAdmin: values.admin });
        io.stdout.write(`Created ${created.isAdmin ? 'administrator' : 'user'} ${nameOf(created)} (${created.id})\n`);
        return 0;
      }
      case 'passwd': {
        const changed = await users.changePassword(store, username, domain, password);
        io.stdout.write(`Changed the password of ${nameOf(changed)}\n`);
        return 0;
      }
      case 'remove': {
        const { user, keys } = await users.removeUser(store, username, domain);
        io.stdout.write(`Removed ${nameOf(user)} and ${keys} ${keys === 1 ? 'key' : 'keys'}\n`);
        return 0;
      }
      case 'list': {
        const all = await store.listUsers();
        const width = Math.max(4, ...all.map((user) => nameOf(user).length));
        const lines = all.map((user) => `${nameOf(user).padEnd(width)}  ${(user.isAdmin ? 'admin' : 'user').padEnd(5)}  ${user.createdAt.toISOString()}  ${user.id}`);
        io.stdout.write([`${'NAME'.padEnd(width)}  ROLE   CREATED                   ID`, ...lines, ''].join('\n'));
        return 0;
      }
    }
  } finally {
    await store.close();
  }
}

/** The first line of standard input (prompted for on a terminal), or UserInputError when there is none. */
async function readPassword(io: UserIo): Promise<string> {
  if (io.stdin.isTTY) io.stderr.write('Password: ');
  const lines = createInterface({ input: io.stdin, terminal: false });
  for await (const line of lines) {
    lines.close();
    return line;
  }
  const { UserInputError } = await import('../backends/embedded/keys/users.js');
  throw new UserInputError('no password given: write it to standard input');
}
