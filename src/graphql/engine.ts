import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginInlineTraceDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import type { GraphQLFormattedError } from 'graphql';
import { PersistedQueryCache } from '../cache/apq.js';
import { DEFAULT_PREPARED_DOCUMENTS, DEFAULT_RESPONSE_CACHE_ENTRIES } from '../config/defaults.js';
import type { Config } from '../config/env.js';
import type { Logger } from '../logger.js';
import { observabilityPlugin } from '../observability/graphqlPlugin.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { SharedCache } from '../ports/cache.js';
import type { GatewayContext } from './context.js';
import { createDocumentStore } from './documentStore.js';
import { NewDocuments, validationMarkPlugin } from './newDocuments.js';
import { graphqlExecution, type ExecuteGraphQL } from './execute.js';
import { gatewayFormatError } from './formatError.js';
import { queryLimitsRule } from './limits.js';
import { operationTypesRule } from './operationTypes.js';
import { PreparedOperations } from './preparedOperations.js';
import { ResponseCache } from './responseCache.js';
import { buildGatewaySchema } from './schema.js';
import { TrustedDocuments } from './trustedDocuments.js';

/** The settings GraphQL execution reads. */
export type GraphQLEngineConfig = Pick<Config, 'introspection' | 'limits'> &
  Partial<Pick<Config, 'responseCacheMaxEntries' | 'responseCacheMaxBytes' | 'preparedOperationsMaxDocuments' | 'trustedDocuments'>>;

/**
 * Everything that executes GraphQL, built once per gateway: Apollo Server (started), the prepared
 * path that answers a repeated query without Apollo's pipeline (null when off), the response cache
 * of PUBLIC answers (null when off), the trusted documents (null without a manifest), and the
 * formatError both paths share; and `execute`, the one entry point that chooses, per request,
 * which of the two answers (execute.ts).
 */
export interface GraphQLEngine {
  apollo: ApolloServer<GatewayContext>;
  prepared: PreparedOperations | null;
  responseCache: ResponseCache | null;
  trustedDocuments: TrustedDocuments | null;
  /** The query texts parsed and validated before, which the new-document limit passes. */
  newDocuments: NewDocuments;
  formatError: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;
  /** A request past HTTP (authenticated, its body read and parsed, not in the response cache) -> its answer. */
  execute: ExecuteGraphQL;
}

export async function createGraphQLEngine(config: GraphQLEngineConfig, cache: SharedCache, metrics: GatewayMetrics, log: Logger): Promise<GraphQLEngine> {
  const maxResponses = config.responseCacheMaxEntries ?? DEFAULT_RESPONSE_CACHE_ENTRIES;
  const responseCache = maxResponses > 0 ? new ResponseCache({ maxEntries: maxResponses, maxBytes: config.responseCacheMaxBytes, maxTokens: config.limits.maxTokens }) : null;
  const schema = buildGatewaySchema({ introspection: config.introspection, maxCost: config.limits.maxCost });
  const trustedDocuments = config.trustedDocuments ? new TrustedDocuments(config.trustedDocuments) : null;
  // which file the start took, never its operations
  if (config.trustedDocuments) {
    const { path, operations, only } = config.trustedDocuments;
    log.info({ manifest: path, operations: operations.size, only }, 'trusted documents loaded');
  }
  const parseOptions = { maxTokens: config.limits.maxTokens };
  const validationRules = [operationTypesRule, queryLimitsRule(config.limits)];
  const formatError = gatewayFormatError(log);
  const apollo = new ApolloServer<GatewayContext>({
    schema,
    introspection: config.introspection,
    csrfPrevention: true,
    // main.ts owns the signals: Apollo's own handler would stop, then re-raise the signal and die
    stopOnTerminationSignals: false,
    includeStacktraceInErrorResponses: false,
    persistedQueries: { cache: new PersistedQueryCache(cache) },
    // sized by the source text each parsed document holds, not by Apollo's estimate of the tree
    documentStore: createDocumentStore(),
    allowBatchedHttpRequests: false,
    parseOptions,
    validationRules,
    // no "Did you mean ...?" where the schema is not to be explored
    hideSchemaDetailsFromClientErrors: !config.introspection,
    plugins: [
      ApolloServerPluginLandingPageDisabled(),
      // Apollo turns it on for a subgraph schema: every field's timing to whoever sends
      // apollo-federation-include-trace (traces go through OpenTelemetry here)
      ApolloServerPluginInlineTraceDisabled(),
      observabilityPlugin<GatewayContext>(metrics),
      validationMarkPlugin<GatewayContext>(),
    ],
    formatError,
  });
  const maxDocuments = config.preparedOperationsMaxDocuments ?? DEFAULT_PREPARED_DOCUMENTS;
  const prepared =
    maxDocuments > 0
      ? new PreparedOperations({
          // a schema of its own: Apollo wraps every field of its schema for its plugins, and
          // graphql-jit inlines only the fields that have no resolver (BENCHMARKS.md, eighth pass)
          schema: buildGatewaySchema({ introspection: config.introspection, maxCost: config.limits.maxCost }),
          parseOptions,
          validationRules,
          formatError,
          maxDocuments,
          introspection: config.introspection,
          hideSchemaDetailsFromClientErrors: !config.introspection,
        })
      : null;
  await apollo.start();
  const execute = graphqlExecution({ apollo, prepared, formatError }, metrics);
  return { apollo, prepared, responseCache, trustedDocuments, newDocuments: new NewDocuments(), formatError, execute };
}
