import { isObjectType, type GraphQLCompositeType, type GraphQLResolveInfo } from 'graphql';
import { toItemId } from '../../ports/itemRecord.js';
import type { ItemModel } from '../../ports/backend.js';
import type { GatewayContext } from '../context.js';
import { badUserInput, forbidden, notFound } from '../../errors.js';
import { MAX_ITEM_IDS } from '../../ports/limits.js';
import { entityCost, limitError } from '../limits.js';
import { charged, requirePrincipal } from './helpers.js';

/** The one entity type this subgraph resolves. */
const ENTITY = 'Item';

/** Apollo Server's cache-control plugin's view on a field, where it is on (info.cacheControl). */
interface FieldCacheControl {
  cacheHint: { restrict(hint: { maxAge?: number; scope?: 'PUBLIC' | 'PRIVATE' }): void };
  cacheHintFromType(type: GraphQLCompositeType): { maxAge?: number; scope?: 'PUBLIC' | 'PRIVATE' } | undefined;
}

/**
 * Query._entities, in place of @apollo/subgraph's own (which resolves each representation on its
 * own): authenticated callers only, like `item`; at most MAX_ITEM_IDS (one items batch); the ids go through
 * the request's items loader together, so N representations cost one backend call. An entry is
 * null with its own error where the representation is not an Item with an item id
 * (BAD_USER_INPUT) or the item does not exist (NOT_FOUND), as in `items`.
 */
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
  // validation costed one representation (a router sends them as a variable): now the real count
  const cost = representations.length * entityCost(info.fieldNodes[0]!, info.fragments);
  if (cost > maxCost) throw limitError('cost', maxCost, cost, info.fieldNodes[0]);
  // as @apollo/subgraph does: the answer may be kept as long as an Item may (a router's entity cache)
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

/** The item id of a representation, or the error its entry gets. */
function itemIdOf(representation: unknown, index: number): number | Error {
  const { __typename, itemId } = (typeof representation === 'object' && representation !== null ? representation : {}) as Record<string, unknown>;
  if (__typename !== ENTITY) {
    return badUserInput(`Representation ${index} is not an ${ENTITY}: this subgraph resolves only ${ENTITY} entities`, 'representations');
  }
  const id = toItemId(itemId);
  return id ?? badUserInput(`Representation ${index} has no valid itemId (a whole number from 1 to ${Number.MAX_SAFE_INTEGER})`, 'representations');
}

/**
 * The federation fields' resolvers, laid over @apollo/subgraph's. `_service { sdl }` is answered
 * only where INTROSPECTION is on: the subgraph's SDL is the schema itself, which a gateway with
 * introspection off does not show (a router in production reads a composed supergraph and never
 * asks; `rover dev` and `rover subgraph introspect` do, against a development gateway).
 */
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
      // every entity is an Item (entities returns nothing else)
      __resolveType: () => ENTITY,
    },
  };
}
