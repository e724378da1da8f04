import { GraphQLError, GraphQLScalarType, Kind, print, type ValueNode } from 'graphql';
import { toItemId } from '../ports/itemRecord.js';
import { eventTimeProblem, isoTimeProblem, parseIsoTime } from '../ports/ingest.js';

/** The most of a refused value a message shows. */
const MAX_SHOWN = 40;

/**
 * The refusal of an item id, saying the real range and what was sent: a value as JSON, a literal
 * as written in the query (3.5, "abc", true). It said "at most 16 digits", which
 * 9007199254740992 has (the limit is 2^53 − 1, where a JSON number stops being exact), and of a
 * literal that was no integer or string, its kind ("FloatValue").
 */
function invalidItemId(sent: string | undefined): GraphQLError {
  const shown = sent === undefined ? 'nothing' : sent.length > MAX_SHOWN ? `${sent.slice(0, MAX_SHOWN)}…` : sent;
  return new GraphQLError(`ItemId must be a whole number from 1 to ${Number.MAX_SAFE_INTEGER} (2^53 − 1), or a string of its digits; got ${shown}`);
}

// JSON.stringify writes -0 as 0, which would say a refused -0 was 0 (a probe)
const invalidItemIdValue = (value: unknown): GraphQLError => invalidItemId(Object.is(value, -0) ? '-0' : JSON.stringify(value));
/** A literal as written; a list or an object is printed whole first, so no longer than MAX_SHOWN of it is shown. */
const invalidItemIdLiteral = (ast: ValueNode): GraphQLError => invalidItemId(print(ast));

/**
 * A literal's refusal pointing at the literal: graphql-js's validation reports a GraphQLError a
 * scalar's parseLiteral throws as it is, so one made without the node had no `locations`, where
 * every other validation error has them.
 */
function atLiteral<T>(ast: ValueNode, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (!(error instanceof GraphQLError) || error.nodes !== undefined) throw error;
    const Refusal = error.constructor as typeof GraphQLError;
    throw new Refusal(error.message, { nodes: ast, extensions: error.extensions });
  }
}

/** Item ids past 2^31: a JSON number out, a number or a digit string in. */
export const ItemIdScalar = new GraphQLScalarType<number, number>({
  name: 'ItemId',
  serialize(value) {
    const id = toItemId(value);
    if (id === null) throw invalidItemIdValue(value);
    return id;
  },
  parseValue(value) {
    const id = toItemId(value);
    if (id === null) throw invalidItemIdValue(value);
    return id;
  },
  parseLiteral(ast) {
    return atLiteral(ast, () => {
      // graphql-js would reject 5000000001 as an Int literal; read the digits ourselves
      const id = ast.kind === Kind.INT || ast.kind === Kind.STRING ? toItemId(ast.kind === Kind.INT ? Number(ast.value) : ast.value) : null;
      if (id === null || (ast.kind === Kind.INT && String(id) !== ast.value.replace(/^0+/, ''))) throw invalidItemIdLiteral(ast);
      return id;
    });
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
  if (ms === null) {
    const problem = text === null ? null : isoTimeProblem(text);
    throw new GraphQLError(`DateTime must be an ISO 8601 string with an offset (2026-11-23T06:40:00Z or +01:00)${problem === null ? '' : `: ${problem}`}`);
  }
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
    return atLiteral(ast, () => isoTime(ast.kind === Kind.STRING ? ast.value : null));
  },
});
