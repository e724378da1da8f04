import { GraphQLError, GraphQLScalarType, Kind } from 'graphql';
import { toItemId } from '../ports/itemRecord.js';
import { eventTimeProblem, parseIsoTime } from '../ports/ingest.js';

const invalidItemId = (value: unknown): GraphQLError =>
  new GraphQLError(`ItemId must be a positive integer of at most 16 digits, got ${JSON.stringify(value)?.slice(0, 40)}`);

/** Item ids past 2^31: a JSON number out, a number or a digit string in. */
export const ItemIdScalar = new GraphQLScalarType<number, number>({
  name: 'ItemId',
  serialize(value) {
    const id = toItemId(value);
    if (id === null) throw invalidItemId(value);
    return id;
  },
  parseValue(value) {
    const id = toItemId(value);
    if (id === null) throw invalidItemId(value);
    return id;
  },
  parseLiteral(ast) {
    // graphql-js would reject 5000000001 as an Int literal; read the digits ourselves
    const id = ast.kind === Kind.INT || ast.kind === Kind.STRING ? toItemId(ast.kind === Kind.INT ? Number(ast.value) : ast.value) : null;
    if (id === null || (ast.kind === Kind.INT && String(id) !== ast.value.replace(/^0+/, ''))) {
      throw invalidItemId(ast.kind === Kind.INT || ast.kind === Kind.STRING ? ast.value : ast.kind);
    }
    return id;
  },
});

/**
 * A refusal that depends on the clock (a time a day ahead now is not a day ahead in an hour): a
 * document refused with one, for a time written in its text, is refused again only by checking
 * it again, never from a remembered refusal.
 */
export class ClockDependentError extends GraphQLError {}

/**
 * An input DateTime: ISO 8601 with an offset, as the REST twin reads it (parseIsoTime), not
 * whatever Date takes; and in the range an event may have (eventTimeProblem), so that every bad
 * time is refused here, one kind of answer (the only DateTime input is an event's time). Its value
 * is ms since 1970, what the event keeps: no Date made for each of a batch's 5,000 events only to
 * be read back (a fifth of the scalar's cost in the server's profile).
 */
function isoTime(text: string | null): number {
  const ms = text === null ? null : parseIsoTime(text);
  if (ms === null) throw new GraphQLError('DateTime must be an ISO 8601 string with an offset (2026-11-23T06:40:00Z or +01:00)');
  const now = Date.now();
  const problem = eventTimeProblem(ms, now);
  if (problem !== null) throw ms > now ? new ClockDependentError(`DateTime ${problem}`) : new GraphQLError(`DateTime ${problem}`);
  return ms;
}

export const DateTimeScalar = new GraphQLScalarType<number | Date | string, string>({
  name: 'DateTime',
  serialize(value) {
    const date = value instanceof Date ? value : new Date(typeof value === 'number' ? value : String(value));
    if (Number.isNaN(date.getTime())) throw new GraphQLError('DateTime cannot represent an invalid date');
    return date.toISOString();
  },
  parseValue(value) {
    return isoTime(typeof value === 'string' ? value : null);
  },
  parseLiteral(ast) {
    return isoTime(ast.kind === Kind.STRING ? ast.value : null);
  },
});
