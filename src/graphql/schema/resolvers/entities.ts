import { isObjectType, type GraphQLCompositeType, type GraphQLResolveInfo } from 'graphql';
import { toItemId } from '../../../model/itemRecord.js';
import type { ItemModel } from '../../../ports/backend.js';
import type { GatewayContext } from '../context.js';
import { badUserInput, forbidden, notFound } from '../../../errors.js';
import { MAX_ITEM_IDS } from '../../../config/limits.js';
import { entityCost, limitError } from '../../pipeline/limits.js';
import { charged, requirePrincipal } from './helpers.js';

const ENTITY = 'Item';

interface FieldCacheControl {
  cacheHint: { restrict(hint: { maxAge?: number; scope?: 'PUBLIC' | 'PRIVATE' }): void };
  cacheHintFromType(type: GraphQLCompositeType): { maxAge?: number; scope?: 'PUBLIC' | 'PRIVATE' } | undefined;
}

/** Query._entities in place of @apollo/subgraph's per-representation one: authenticated only, at most
 * MAX_ITEM_IDS, all ids through one loader batch. Bad or unknown entries are null with their own error. */
async function entities(
  maxCost: number,
  { representations }: { representations: readonly unknown[] },
  context: GatewayContext,
  info: GraphQLResolveInfo,
): Promise<(ItemModel | Error)[]> {
  requirePrincipal(context);
  if (representations.length > MAX_ITEM_IDS) {
    throw badUserInput(`At most ${MAX_ITEM_IDS} representations a query`, 'representations');
  }
  // validation costed one representation (sent as a variable): now the real count
  const cost = representations.length * entityCost(info.fieldNodes[0]!, info.fragments);
  if (cost > maxCost) throw limitError('cost', maxCost, cost, info.fieldNodes[0]);
  // as @apollo/subgraph does: cacheable as long as an Item (a router's entity cache)
  const cacheControl = (info as GraphQLResolveInfo & { cacheControl?: FieldCacheControl }).cacheControl;
  const itemType = info.schema.getType(ENTITY);
  if (cacheControl && isObjectType(itemType)) {
    const hint = cacheControl.cacheHintFromType(itemType);
    if (hint) cacheControl.cacheHint.restrict(hint);
  }

  const ids = representations.map(itemIdOf);
  const loaded = charged(context, await context.loaders.items.loadMany(ids.filter((id): id is number => typeof id === 'number')));
  let next = 0;
  // graphql-js turns an Error in a list into a null with its own error at that index
  return ids.map((id) => {
    if (typeof id !== 'number') return id;
    const item = loaded[next++];
    return item instanceof Error ? item : (item ?? notFound(`No item with itemId ${id}`));
  });
}

function itemIdOf(representation: unknown, index: number): number | Error {
  const { __typename, itemId } = (typeof representation === 'object' && representation !== null ? representation : {}) as Record<string, unknown>;
  if (__typename !== ENTITY) {
    return badUserInput(`Representation ${index} is not an ${ENTITY}: this subgraph resolves only ${ENTITY} entities`, 'representations');
  }
  const id = toItemId(itemId);
  return id ?? badUserInput(`Representation ${index} has no valid itemId (a whole number from 1 to ${Number.MAX_SAFE_INTEGER})`, 'representations');
}

/** Federation fields over @apollo/subgraph's; `_service { sdl }` only with INTROSPECTION on, as it is the schema. */
export function federationResolvers(options: { introspection: boolean; maxCost: number }) {
  return {
    Query: {
      _entities: (_: unknown, args: { representations: readonly unknown[] }, context: GatewayContext, info: GraphQLResolveInfo) =>
        entities(options.maxCost, args, context, info),
      ...(options.introspection
        ? {}
        : {
            _service: () => {
              throw forbidden('The subgraph schema (_service) is served only where introspection is on (INTROSPECTION=true)');
            },
          }),
    },
    _Entity: {
      __resolveType: () => ENTITY,
    },
  };
}
