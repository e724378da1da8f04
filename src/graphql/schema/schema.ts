import { readdirSync, readFileSync } from 'node:fs';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { defaultFieldResolver, isObjectType, parse, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import { FIELD_ACCESS, requireAccess, type Access } from '../../model/scopes.js';
import type { GatewayContext } from './context.js';
import { DEFAULT_LIMITS } from '../../config/defaults.js';
import { federationResolvers } from './resolvers/entities.js';
import { resolvers } from './resolvers/index.js';

/** buildSubgraphSchema's resolver map; the package exports the type only from deep inside. */
type SubgraphResolvers = Extract<Parameters<typeof buildSubgraphSchema>[0], { resolvers?: unknown }>['resolvers'];

const SCHEMA_DIR = new URL('../../../schema/', import.meta.url);

export function loadTypeDefs(): string[] {
  return readdirSync(SCHEMA_DIR)
    .filter((file) => file.endsWith('.graphql'))
    .sort()
    .map((file) => readFileSync(new URL(file, SCHEMA_DIR), 'utf8'));
}

/** The gateway's schema as a Federation 2 subgraph, serving clients as a plain schema would.
 * `_service` follows `introspection`; _entities checks its real representations against `maxCost`. */
export function buildGatewaySchema(options: { introspection: boolean; maxCost?: number }): GraphQLSchema {
  const federation = federationResolvers({ introspection: options.introspection, maxCost: options.maxCost ?? DEFAULT_LIMITS.maxCost });
  const all = { ...resolvers, ...federation, Query: { ...resolvers.Query, ...federation.Query } };
  return guardRootFields(buildSubgraphSchema({
    typeDefs: loadTypeDefs().map((sdl) => parse(sdl)),
    resolvers: all as unknown as SubgraphResolvers,
  }));
}

/** Every root field checks its scope (FIELD_ACCESS) before its resolver runs, whichever executor runs
 * it; a field with no entry is refused to every credential rather than left open. */
function guardRootFields(schema: GraphQLSchema): GraphQLSchema {
  for (const typeName of ['Query', 'Mutation'] as const) {
    const type = schema.getType(typeName);
    if (!isObjectType(type)) continue;
    for (const field of Object.values(type.getFields())) {
      const access: Access = FIELD_ACCESS[typeName][field.name] ?? 'KEYS_MANAGE';
      if (access === 'public' || access === 'authenticated') continue;
      const resolve: GraphQLFieldResolver<unknown, GatewayContext> = field.resolve ?? defaultFieldResolver;
      field.resolve = (source, args, context: GatewayContext, info) => {
        requireAccess(context.principal, access);
        return resolve(source, args, context, info);
      };
    }
  }
  return schema;
}
