export const seeHelp = (command: string): string => `see recs-gateway ${command} --help`;

/** A usage error as one line: the whole help after it buried the reason. */
export const usageProblem = (reason: string, command: string): string => `${reason}; ${seeHelp(command)}`;

/** A parseArgs error as one line naming the problem; node's own text answers a question nobody asked. Null if not parseArgs'. */
export function argsProblem(error: unknown, command: string): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  if (!(error instanceof Error) || typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS')) return null;
  const see = seeHelp(command);
  const quoted = /'([^']*)'/.exec(error.message)?.[1];
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${quoted ?? error.message}; ${see}`;
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${quoted ?? error.message}; ${see}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      // "Option '--format <value>' argument missing", "Option '--admin' does not take an argument"
      const option = quoted?.split(' ')[0];
      if (option !== undefined && error.message.endsWith('argument missing')) return `${option} needs a value; ${see}`;
      if (option !== undefined && error.message.endsWith('does not take an argument')) return `${option} takes no value; ${see}`;
      // "--format --item x": the next word looks like an option
      if (option !== undefined && error.message.includes('is ambiguous')) return `${option} needs a value (one starting with a dash is written ${option}=-x); ${see}`;
      break;
    }
  }
  return `${error.message.split('\n')[0]!.split('. ')[0]!.replace(/\.$/, '')}; ${see}`;
}
