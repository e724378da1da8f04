// Every route the gateway serves, as data: the router, CORS, the metrics and `Expect` all read this one table.

/** Which interface answers a request: each has its own handler and its own refusal shapes. */
export type Speaks = 'graphql' | 'ide' | 'health' | 'readiness' | 'metrics' | 'openapi' | 'rest-keys' | 'rest-recs' | 'rest-ingest';

/** What a request's body may be, and so its limit (prelude.ts): none read; an ordinary one (BODY_LIMIT_BYTES, a
 * stranger's the anonymous limit); a batch of events or item records (the batch limit, refused unread to who may not
 * send one); a GraphQL operation (ordinary, or a batch for who may send one). */
export type BodyKind = 'none' | 'ordinary' | 'batch' | 'operation';

/** One route the gateway serves. */
export interface Route {
  readonly name: string;
  readonly label: string;
  readonly path: string;
  readonly prefix?: boolean;
  /** With prefix: how the path must end too. */
  readonly suffix?: string;
  readonly methods: readonly string[];
  readonly cors: boolean;
  /** false where the interface answers other methods in its own shape. */
  readonly routerRefusesMethods: boolean;
  readonly speaks: Speaks;
  readonly body: BodyKind;
  readonly byMethod?: Readonly<Record<string, { speaks: Speaks; body: BodyKind }>>;
}

const READ = ['GET', 'HEAD'] as const;
/** Where the IDE's files are served: each under a name made of its content's hash. */
export const IDE_ASSET_PREFIX = '/graphql/ide/';

/** Most specific first: the first route a path matches serves it. */
export const ROUTES: readonly Route[] = [
  {
    name: 'graphql', label: '/graphql', path: '/graphql', methods: ['GET', 'POST'], cors: true, routerRefusesMethods: false, speaks: 'graphql', body: 'none',
    byMethod: { POST: { speaks: 'graphql', body: 'operation' } },
  },
  { name: 'ide', label: 'other', path: IDE_ASSET_PREFIX, prefix: true, methods: READ, cors: false, routerRefusesMethods: true, speaks: 'ide', body: 'none' },
  { name: 'healthz', label: '/healthz', path: '/healthz', methods: READ, cors: false, routerRefusesMethods: true, speaks: 'health', body: 'none' },
  { name: 'readyz', label: '/readyz', path: '/readyz', methods: READ, cors: false, routerRefusesMethods: true, speaks: 'readiness', body: 'none' },
  { name: 'metrics', label: '/metrics', path: '/metrics', methods: READ, cors: false, routerRefusesMethods: true, speaks: 'metrics', body: 'none' },
  { name: 'openapi', label: 'other', path: '/openapi.json', methods: READ, cors: false, routerRefusesMethods: true, speaks: 'openapi', body: 'none' },
  {
    name: 'apikeys', label: '/api/v1/apikey', path: '/api/v1/apikey', methods: ['GET', 'POST'], cors: true, routerRefusesMethods: false, speaks: 'rest-keys', body: 'none',
    byMethod: { POST: { speaks: 'rest-keys', body: 'ordinary' } },
  },
  { name: 'apikeyUsage', label: '/api/v1/apikey', path: '/api/v1/apikey/', prefix: true, suffix: '/usage', methods: ['GET'], cors: true, routerRefusesMethods: false, speaks: 'rest-keys', body: 'none' },
  { name: 'apikeyRotate', label: '/api/v1/apikey', path: '/api/v1/apikey/', prefix: true, suffix: '/rotate', methods: ['POST'], cors: true, routerRefusesMethods: false, speaks: 'rest-keys', body: 'ordinary' },
  {
    name: 'apikey', label: '/api/v1/apikey', path: '/api/v1/apikey/', prefix: true, methods: ['DELETE', 'PATCH'], cors: true, routerRefusesMethods: false, speaks: 'rest-keys', body: 'none',
    byMethod: { PATCH: { speaks: 'rest-keys', body: 'ordinary' } },
  },
  {
    name: 'events', label: '/v1/events', path: '/v1/events', methods: ['POST'], cors: true, routerRefusesMethods: false, speaks: 'rest-ingest', body: 'none',
    byMethod: { POST: { speaks: 'rest-ingest', body: 'batch' } },
  },
  {
    name: 'items', label: '/v1/items', path: '/v1/items', methods: ['GET', 'PUT'], cors: true, routerRefusesMethods: false, speaks: 'rest-recs', body: 'none',
    byMethod: { PUT: { speaks: 'rest-ingest', body: 'batch' } },
  },
  { name: 'item', label: '/v1/items', path: '/v1/items/', prefix: true, methods: ['GET'], cors: true, routerRefusesMethods: false, speaks: 'rest-recs', body: 'none' },
  { name: 'postbrowse', label: '/v1/postbrowse', path: '/v1/postbrowse', methods: ['GET'], cors: true, routerRefusesMethods: false, speaks: 'rest-recs', body: 'none' },
  { name: 'nbp', label: '/v1/nbp', path: '/v1/nbp', methods: ['GET'], cors: true, routerRefusesMethods: false, speaks: 'rest-recs', body: 'none' },
  { name: 'statsImpressions', label: '/v1/stats/impressions', path: '/v1/stats/impressions', methods: ['POST'], cors: false, routerRefusesMethods: false, speaks: 'rest-ingest', body: 'ordinary' },
  { name: 'stats', label: '/v1/stats', path: '/v1/stats', methods: ['GET'], cors: true, routerRefusesMethods: false, speaks: 'rest-ingest', body: 'none' },
  { name: 'trending', label: '/v1/trending', path: '/v1/trending', methods: ['GET'], cors: true, routerRefusesMethods: false, speaks: 'rest-recs', body: 'none' },
  { name: 'popular', label: '/v1/popular', path: '/v1/popular', methods: ['GET'], cors: true, routerRefusesMethods: false, speaks: 'rest-recs', body: 'none' },
  { name: 'foryou', label: '/v1/foryou', path: '/v1/foryou', methods: ['GET'], cors: true, routerRefusesMethods: false, speaks: 'rest-recs', body: 'none' },
  { name: 'recs', label: 'other', path: '/v1/', prefix: true, methods: ['GET'], cors: true, routerRefusesMethods: false, speaks: 'rest-recs', body: 'none' },
];

/** /graphql, which the router finds without parsing its URL. */
export const GRAPHQL_ROUTE = ROUTES[0]!;
const EXACT = new Map(ROUTES.filter((route) => route.prefix !== true).map((route) => [route.path, route]));
const PREFIXED = ROUTES.filter((route) => route.prefix === true);

const isRestPath = (path: string): boolean => path.startsWith('/v1/') || path.startsWith('/api/v1/apikey');

/** The route serving a path (without its query string), or null. */
export function routeOf(path: string): Route | null {
  if (path === '/graphql') return GRAPHQL_ROUTE;
  const key = isRestPath(path) && path.length > 1 ? path.replace(/\/+$/, '') : path;
  const exact = EXACT.get(key);
  if (exact !== undefined) return exact;
  for (const route of PREFIXED) if (key.startsWith(route.path) && (route.suffix === undefined || key.endsWith(route.suffix))) return route;
  return null;
}

/** The HTTP metrics' route label of a path: `other` for any path no route names. */
export function labelOf(path: string): string {
  return routeOf(path)?.label ?? 'other';
}

/** The interface and the body of a request with `method` on `route`. */
export function intakeOf(route: Route, method: string | undefined): { speaks: Speaks; body: BodyKind } {
  return route.byMethod?.[(method ?? 'GET').toUpperCase()] ?? route;
}

const ALLOW = new Map(ROUTES.map((route) => [route, route.methods.join(', ')]));

/** A route's methods as Allow and Access-Control-Allow-Methods list them. */
export function allowOf(route: Route): string {
  return ALLOW.get(route)!;
}

/** The methods a preflight is told for a path; null for a path CORS does not cover. */
export function corsMethods(path: string): string | null {
  const route = routeOf(path);
  return route !== null && route.cors ? allowOf(route) : null;
}
