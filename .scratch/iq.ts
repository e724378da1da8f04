import { getIntrospectionQuery, parse } from 'graphql';
import { measureOperations } from '../src/graphql/limits.ts';
import { DEFAULT_LIMITS } from '../src/config/defaults.ts';
for (const opts of [{}, { descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true, schemaDescription: true, inputValueDeprecation: true, oneOf: true }]) {
  const m = measureOperations(parse(getIntrospectionQuery(opts as never)))[0]!.measure;
  console.log(JSON.stringify(opts), { depth: m.depth, cost: m.cost, aliases: m.aliases, directives: m.directives, sameName: m.sameName });
}
console.log(DEFAULT_LIMITS);
