/**
 * What compiling an operation costs (not a test): npx tsx bench/compile.ts
 * Prepared operations are compiled with graphql-jit once they have run COMPILE_AFTER_RUNS times
 * (src/graphql/preparedOperations.ts). Prints, for the bench's query, its nested query and a wide
 * one (60 root fields, 7.8 KB), the time to compile it against the reference measured in the
 * same run: validating it with graphql-js, which every new query text pays once.
 */
import { parse, validate } from 'graphql';
import { compileQuery } from 'graphql-jit';
import { buildGatewaySchema } from '../src/graphql/schema.js';

const ROUNDS = 50;
const schema = buildGatewaySchema({ introspection: true });
const wideField = (i: number): string =>
  `a${i}: item(itemId: ${i + 1}) { itemId name salePrice brandName color size upc msrp parent { itemId name variantItems { itemId name } } }`;
const queries: Record<string, string> = {
  'the bench query': 'query Recs($itemId: ItemId!) { productRecommendations(itemId: $itemId) { itemId name salePrice brandName customerRating } }',
  'the nested query': 'query Nested($itemId: ItemId!) { productRecommendations(itemId: $itemId) { itemId name salePrice variantItems { itemId name salePrice color size } } }',
  'a wide query, 60 root fields': `{ ${Array.from({ length: 60 }, (_, i) => wideField(i)).join(' ')} }`,
};

function msPerRound(run: () => unknown): number {
  for (let n = 0; n < 10; n++) run();
  const started = performance.now();
  for (let n = 0; n < ROUNDS; n++) run();
  return (performance.now() - started) / ROUNDS;
}

for (const [name, text] of Object.entries(queries)) {
  const document = parse(text);
  const validating = msPerRound(() => validate(schema, document));
  const compiling = msPerRound(() => compileQuery(schema, document));
  console.log(
    `${name} (${text.length} characters): validate ${validating.toFixed(2)} ms (reference), compile ${compiling.toFixed(2)} ms (${(compiling / validating).toFixed(1)}x)`,
  );
}
console.log(`node ${process.version}; ${ROUNDS} rounds each after 10 unmeasured`);
