import { GraphQLError, GraphQLScalarType, Kind, print, type ValueNode } from 'graphql';
import { toItemId } from '../../model/itemRecord.js';
import { eventTimeProblem, isoTimeProblem, parseIsoTime } from '../../model/ingest.js';

const MAX_SHOWN = 40;

/** Item id refusal saying the real range (to 2^53 − 1) and what was sent. */
function invalidItemId(sent: string | undefined): GraphQLError {
  const shown = sent === undefined ? 'nothing' : sent.length > MAX_SHOWN ? `${sent.slice(0, MAX_SHOWN)}…` : sent;
  return new GraphQLError(`ItemId must be a whole number from 1 to ${Number.MAX_SAFE_INTEGER} (2^53 − 1), or a string of its digits; got ${shown}`);
}

// JSON.stringify writes -0 as 0, which would misreport what was refused
const invalidItemIdValue = (value: unknown): GraphQLError => invalidItemId(Object.is(value, -0) ? '-0' : JSON.stringify(value));
const invalidItemIdLiteral = (ast: ValueNode): GraphQLError => invalidItemId(print(ast));

/** Points a literal's refusal at the literal: one thrown without the node has no `locations`. */
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
      // graphql-js would reject a large Int literal; read the digits ourselves
      const id = ast.kind === Kind.INT || ast.kind === Kind.STRING ? toItemId(ast.kind === Kind.INT ? Number(ast.value) : ast.value) : null;
      if (id === null || (ast.kind === Kind.INT && String(id) !== ast.value.replace(/^0+/, ''))) throw invalidItemIdLiteral(ast);
      return id;
    });
  },
});

/** A refusal depending on the clock: a document with one is checked again, never refused from memory. */
export class ClockDependentError extends GraphQLError {}

/** An input DateTime as the REST twin reads it, ISO 8601 with an offset and in an event's range, so
 * every bad time is refused here; kept as ms, with no Date made per event. */
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
