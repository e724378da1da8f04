import { badUserInput, ErrorCode, GatewayError } from '../errors.js';
import type { ApiKeyScope, PrincipalModel, UserModel } from '../ports/backend.js';

/** Every scope, in the order they are listed. */
export const API_KEY_SCOPES: readonly ApiKeyScope[] = ['RECOMMENDATIONS_READ', 'EVENTS_WRITE', 'KEYS_MANAGE'];

/** What a request needs beyond its scope: nothing at all, or any valid credential. */
export type Access = ApiKeyScope | 'public' | 'authenticated';

/** The scope each root field of the schema needs. A field missing here is refused to everyone
 * (scopedResolver), and test/auth/scopeTable.test.ts fails for it: a new field must be placed. */
export const FIELD_ACCESS: Readonly<Record<'Query' | 'Mutation', Readonly<Record<string, Access>>>> = {
  Query: {
    viewer: 'authenticated',
    _service: 'public',
    _entities: 'RECOMMENDATIONS_READ',
    item: 'RECOMMENDATIONS_READ',
    items: 'RECOMMENDATIONS_READ',
    postBrowsedProducts: 'RECOMMENDATIONS_READ',
    productRecommendations: 'RECOMMENDATIONS_READ',
    recommendations: 'RECOMMENDATIONS_READ',
    trendingItems: 'RECOMMENDATIONS_READ',
    popularItems: 'RECOMMENDATIONS_READ',
    recommendedForYou: 'RECOMMENDATIONS_READ',
    apiKeys: 'KEYS_MANAGE',
    recommendationStats: 'EVENTS_WRITE',
  },
  Mutation: {
    recordEvents: 'EVENTS_WRITE',
    upsertItems: 'EVENTS_WRITE',
    createApiKey: 'KEYS_MANAGE',
    deleteApiKey: 'KEYS_MANAGE',
    rotateApiKey: 'KEYS_MANAGE',
    updateApiKey: 'KEYS_MANAGE',
  },
};

/** The access each route of src/http/routeTable.ts needs, by route name and method (`*`: any). */
export const ROUTE_ACCESS: Readonly<Record<string, Readonly<Record<string, Access>>>> = {
  graphql: { '*': 'public' },
  ide: { '*': 'public' },
  healthz: { '*': 'public' },
  readyz: { '*': 'public' },
  metrics: { '*': 'public' },
  openapi: { '*': 'public' },
  apikeys: { '*': 'KEYS_MANAGE' },
  apikeyRotate: { '*': 'KEYS_MANAGE' },
  apikeyUsage: { '*': 'KEYS_MANAGE' },
  apikey: { '*': 'KEYS_MANAGE' },
  events: { '*': 'EVENTS_WRITE' },
  items: { GET: 'RECOMMENDATIONS_READ', HEAD: 'RECOMMENDATIONS_READ', PUT: 'EVENTS_WRITE' },
  item: { '*': 'RECOMMENDATIONS_READ' },
  postbrowse: { '*': 'RECOMMENDATIONS_READ' },
  nbp: { '*': 'RECOMMENDATIONS_READ' },
  stats: { '*': 'EVENTS_WRITE' },
  statsImpressions: { '*': 'EVENTS_WRITE' },
  trending: { '*': 'RECOMMENDATIONS_READ' },
  popular: { '*': 'RECOMMENDATIONS_READ' },
  foryou: { '*': 'RECOMMENDATIONS_READ' },
  recs: { '*': 'RECOMMENDATIONS_READ' },
};

/** The access a route needs for a method; undefined for a route or method no entry places. */
export function routeAccess(routeName: string, method: string): Access | undefined {
  const byMethod = ROUTE_ACCESS[routeName];
  return byMethod?.[method.toUpperCase()] ?? byMethod?.['*'];
}

/** The scopes a user's rights allow: sending events and items is for administrators only. */
export function scopesOfUser(user: Pick<UserModel, 'isAdmin'>): ApiKeyScope[] {
  return user.isAdmin ? [...API_KEY_SCOPES] : API_KEY_SCOPES.filter((scope) => scope !== 'EVENTS_WRITE');
}

/** A key's scopes as they act: those stored (null, a key made before scopes: all) within its user's rights. */
export function effectiveScopes(stored: readonly ApiKeyScope[] | null, user: Pick<UserModel, 'isAdmin'>): ApiKeyScope[] {
  const rights = scopesOfUser(user);
  return stored === null ? rights : rights.filter((scope) => stored.includes(scope));
}

/** Whether the principal holds the scope; a principal without a list (REST mode) leaves it to the key service. */
export function holdsScope(principal: Pick<PrincipalModel, 'scopes'>, scope: ApiKeyScope): boolean {
  return principal.scopes === undefined || principal.scopes.includes(scope);
}

export const scopeRefusal = (scope: ApiKeyScope): GatewayError =>
  new GatewayError(ErrorCode.FORBIDDEN, `This credential lacks the ${scope} scope this operation needs`, { scope });

/** The one check of scopes, for resolvers and REST handlers alike: FORBIDDEN naming the scope. */
export function requireAccess(principal: Pick<PrincipalModel, 'scopes'> | null, access: Access): void {
  if (access === 'public' || access === 'authenticated' || principal === null) return;
  if (!holdsScope(principal, access)) throw scopeRefusal(access);
}

/** Scopes as asked for (GraphQL enum values or REST strings): known names, each once, in list order. */
export function parseScopes(value: unknown, field = 'scopes'): ApiKeyScope[] {
  if (!Array.isArray(value)) throw badUserInput(`${field} must be a list of ${API_KEY_SCOPES.join(', ')}`, field);
  for (const scope of value) {
    if (typeof scope !== 'string' || !(API_KEY_SCOPES as readonly string[]).includes(scope)) {
      throw badUserInput(`${field} takes only ${API_KEY_SCOPES.join(', ')}`, field);
    }
  }
  if (value.length === 0) throw badUserInput(`${field} must name at least one scope`, field);
  return API_KEY_SCOPES.filter((scope) => value.includes(scope));
}

/** Checks a key's asked-for scopes against its maker: a key never gets a scope its maker lacks,
 * nor one its user's rights do not allow; null (omitted) is all the maker may give. */
export function grantableScopes(
  asked: readonly ApiKeyScope[] | null, maker: Pick<PrincipalModel, 'scopes'>, owner: Pick<UserModel, 'isAdmin'>,
): ApiKeyScope[] | null {
  const rights = scopesOfUser(owner);
  if (asked === null) {
    // a key made by a narrowed key is no wider than its maker
    return maker.scopes === undefined || rights.every((scope) => maker.scopes!.includes(scope)) ? null : rights.filter((s) => maker.scopes!.includes(s));
  }
  checkGrant(asked, maker, owner);
  return [...asked];
}

/** Scopes given to a key: those it did not `have` must be its maker's, and all within its user's rights. */
export function checkGrant(
  asked: readonly ApiKeyScope[], maker: Pick<PrincipalModel, 'scopes'>, owner: Pick<UserModel, 'isAdmin'>, have: readonly ApiKeyScope[] = [],
): void {
  const rights = scopesOfUser(owner);
  for (const scope of asked) {
    if (!have.includes(scope) && !holdsScope(maker, scope)) throw scopeRefusal(scope);
    if (!rights.includes(scope)) throw badUserInput(`The key's user may not hold ${scope}: only administrators may send events and items`, 'scopes');
  }
}
