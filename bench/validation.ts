/**
 * What validating a hostile document costs, before and after the limits run first (not a test):
 * npx tsx bench/validation.ts
 * "before" is one validate() with graphql-js's rules and the query limits without the limit on
 * fields of one response name; "after" is the limits alone first (src/graphql/pipeline/limits.ts),
 * graphql-js's rules only for a document within them. Each round parses afresh (a document over a limit is
 * emptied by the rule). Prints CPU milliseconds per document, and how many times a normal query
 * that costs, measured in the same run.
 */
import { parse, specifiedRules, validate, type ValidationRule } from 'graphql';
import { DEFAULT_LIMITS } from '../src/config/defaults.js';
import { queryLimitsRule } from '../src/graphql/pipeline/limits.js';
import { buildGatewaySchema } from '../src/graphql/schema/schema.js';

const schema = buildGatewaySchema({ introspection: true });
const before: ValidationRule[] = [...specifiedRules, queryLimitsRule({ ...DEFAULT_LIMITS, maxSameNameFields: Infinity })];
const limits = [queryLimitsRule(DEFAULT_LIMITS)];

const copies = (field: string, times: number): string => `{ ${Array.from({ length: times }, () => field).join(' ')} }`;
const documents: Record<string, string> = {
  'a normal query (reference)': 'query Recs($itemId: ItemId!) { productRecommendations(itemId: $itemId) { itemId name salePrice brandName customerRating } }',
  '`viewer { id }` 450 times (6 KB)': copies('viewer { id }', 450),
  '`__typename` 1,000 times': copies('__typename', 1000),
  '`item(itemId: 1) { name }` 300 times': copies('item(itemId: 1) { name }', 300),
  'one fragment with `viewer { id }` spread 400 times': `${copies('...V', 400)} fragment V on Query { viewer { id } }`,
};

function cpuMsPerRound(rounds: number, run: () => unknown): number {
  for (let n = 0; n < 3; n++) run();
  const started = process.cpuUsage();
  for (let n = 0; n < rounds; n++) run();
  const used = process.cpuUsage(started);
  return (used.user + used.system) / 1000 / rounds;
}

const beforeRun = (text: string) => () => validate(schema, parse(text), before);
const afterRun = (text: string) => () => {
  const document = parse(text);
  const errors = validate(schema, document, limits);
  return errors.length > 0 ? errors : validate(schema, document);
};

const reference = documents['a normal query (reference)']!;
// once unmeasured, so that the reference is not the one paying for the JIT's warm-up
cpuMsPerRound(200, beforeRun(reference));
cpuMsPerRound(200, afterRun(reference));
const referenceMs = cpuMsPerRound(200, beforeRun(reference));
for (const [name, text] of Object.entries(documents)) {
  const rounds = text === reference ? 200 : 10;
  const was = text === reference ? referenceMs : cpuMsPerRound(rounds, beforeRun(text));
  const now = cpuMsPerRound(rounds, afterRun(text));
  const errors = afterRun(text)();
  console.log(
    `${name}: before ${was.toFixed(2)} ms (${(was / referenceMs).toFixed(0)}x the reference), ` +
      `after ${now.toFixed(2)} ms (${(now / referenceMs).toFixed(1)}x)${errors.length > 0 ? `: ${errors[0]!.message}` : ''}`,
  );
}
console.log(`node ${process.version}; CPU time per document, parse included; the reference ${referenceMs.toFixed(3)} ms`);
