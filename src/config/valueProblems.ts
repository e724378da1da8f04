import { isIP } from 'node:net';

/** Every setting that stops a start with its problem, in one line, as every failed start is told. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration: ${problems.map(oneLine).join('; ')}`);
    this.name = 'ConfigError';
  }
}

const MAX_PROBLEM_CHARS = 400;

/** A problem as one safe terminal line: control characters escaped (a value's ESC could restyle it), cut short. */
function oneLine(problem: string): string {
  const line = problem.replace(/\s*\n\s*/g, ' ').replace(/[\x00-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return line.length > MAX_PROBLEM_CHARS ? `${line.slice(0, MAX_PROBLEM_CHARS)}…` : line;
}

export function isAddressPattern(pattern: string): boolean {
  const slash = pattern.indexOf('/');
  if (slash === -1) return isIP(pattern) !== 0;
  const family = isIP(pattern.slice(0, slash));
  const bits = pattern.slice(slash + 1);
  if (family === 0 || !/^\d{1,3}$/.test(bits) || Number(bits) > (family === 4 ? 32 : 128)) return false;
  // an IPv4-mapped block is an IPv4 block of its last 32 bits
  return !(family === 6 && /^::ffff:/i.test(pattern) && isIP(pattern.slice(7, slash)) === 4 && Number(bits) < 96);
}

export function originProblem(value: string): string | null {
  if (value === '*') return '* stands alone, not in a list';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `"${value}" is not a URL`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `"${value}" is not http:// or https://`;
  // a pattern would match only itself, an origin no browser sends
  if (url.hostname.includes('*')) return `"${value}" is a pattern, an origin no browser sends: list each origin`;
  // never echo a password
  if (url.username !== '' || url.password !== '') return `the entry for ${url.origin} holds credentials`;
  if (url.origin === value) return null;
  // the same origin written otherwise: say how a browser writes it
  const bare = url.pathname === '/' && url.search === '' && url.hash === '' && !/[/?#]$/.test(value);
  return bare ? `"${value}" is sent by browsers as "${url.origin}"` : `"${value}" has more than an origin (a path, a trailing slash, a query)`;
}
