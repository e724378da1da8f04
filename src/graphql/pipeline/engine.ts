import type { IncomingHttpHeaders } from 'node:http';
import { HeaderMap, type ApolloServer } from '@apollo/server';
import { DEFAULT_PREPARED_DOCUMENTS, DEFAULT_RESPONSE_CACHE_ENTRIES } from '../../config/defaults.js';
import type { Config } from '../../config/env.js';
import type { Logger } from '../../logger.js';
import type { SharedCache } from '../../ports/cache.js';
import { startApollo } from './apollo.js';
import type { GatewayContext } from '../schema/context.js';
import { gatewayFormatError } from './formatError.js';
import { queryLimitsRule } from './limits.js';
import { NewDocuments } from './newDocuments.js';
import { operationTypesRule } from './operationTypes.js';
import { ResponseCache } from './responseCache.js';
import { buildGatewaySchema } from '../schema/schema.js';
import { Takeover } from './takeover.js';
import { TrustedDocuments } from './trustedDocuments.js';

export type GraphQLEngineConfig = Pick<Config, 'introspection' | 'limits'> &
  Partial<Pick<Config, 'responseCacheMaxEntries' | 'responseCacheMaxBytes' | 'preparedOperationsMaxDocuments' | 'trustedDocuments'>>;

/** A GraphQL request as HTTP delivered it: method upper-case, body parsed (undefined for a GET). */
export interface GraphQLHttpRequest {
  method: string;
  headers: IncomingHttpHeaders;
  /** The URL's query string with its `?`. */
  search: string;
  body: unknown;
}

/** GraphQL's answer, for the route to write: whole (`body`), or in parts (`chunks`, incremental delivery). */
export type GraphQLHttpAnswer =
  | { status: number; headers: Record<string, string>; body: string; chunks?: undefined }
  | { status: number; headers: Record<string, string>; body?: undefined; chunks: AsyncIterable<string> };

/** Everything that executes GraphQL, built once: Apollo answers all but the exact queries the takeover knows. */
export interface GraphQLEngine {
  apollo: ApolloServer<GatewayContext>;
  takeover: Takeover | null;
  responseCache: ResponseCache | null;
  trustedDocuments: TrustedDocuments | null;
  newDocuments: NewDocuments;
  execute: (request: GraphQLHttpRequest, context: GatewayContext) => Promise<GraphQLHttpAnswer>;
}

export async function createGraphQLEngine(config: GraphQLEngineConfig, cache: SharedCache, log: Logger): Promise<GraphQLEngine> {
  const maxResponses = config.responseCacheMaxEntries ?? DEFAULT_RESPONSE_CACHE_ENTRIES;
  const responseCache = maxResponses > 0 ? new ResponseCache({ maxEntries: maxResponses, maxBytes: config.responseCacheMaxBytes, maxTokens: config.limits.maxTokens }) : null;
  const trustedDocuments = config.trustedDocuments ? new TrustedDocuments(config.trustedDocuments) : null;
  if (config.trustedDocuments) {
    const { path, operations, only } = config.trustedDocuments;
    log.info({ manifest: path, operations: operations.size, only }, 'trusted documents loaded');
  }
  const schemaOptions = { introspection: config.introspection, maxCost: config.limits.maxCost };
  const apollo = await startApollo({
    schema: buildGatewaySchema(schemaOptions),
    introspection: config.introspection,
    cache,
    parseOptions: { maxTokens: config.limits.maxTokens },
    validationRules: [operationTypesRule, queryLimitsRule(config.limits)],
    formatError: gatewayFormatError(log),
  });
  const maxOperations = config.preparedOperationsMaxDocuments ?? DEFAULT_PREPARED_DOCUMENTS;
  // a schema of its own: Apollo wraps every field of its schema for its plugins
  const takeover = maxOperations > 0 ? new Takeover(buildGatewaySchema(schemaOptions), maxOperations) : null;

  return { apollo, takeover, responseCache, trustedDocuments, newDocuments: new NewDocuments(), execute: executor(apollo, takeover) };
}

/** The takeover's answer where it has one, Apollo's otherwise (which the takeover learns from). */
export function executor(apollo: ApolloServer<GatewayContext>, takeover: Takeover | null): GraphQLEngine['execute'] {
  return async function execute(request, context) {
    const { method, headers, search, body } = request;
    const taken = takeover === null ? null : Takeover.requestOf(method, headers, body);
    if (taken !== null) {
      const answer = await takeover!.answer(taken, context);
      if (answer !== null) return answer;
    }
    const result = await apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method, headers: headerMapOf(headers), search, body },
      context: () => Promise.resolve(context),
    });
    const answerHeaders: Record<string, string> = {};
    for (const [name, value] of result.headers) answerHeaders[name] = value;
    const status = result.status ?? 200;
    if (result.body.kind === 'chunked') return { status, headers: answerHeaders, chunks: result.body.asyncIterator };
    if (taken !== null && status === 200 && context.resolved.firstErrorCode === null) takeover!.learn(taken, context.resolved, answerHeaders);
    return { status, headers: answerHeaders, body: result.body.string };
  };
}

function headerMapOf(headers: IncomingHttpHeaders): HeaderMap {
  const map = new HeaderMap();
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    map.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return map;
}
