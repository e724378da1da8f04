import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import { ApolloServerPluginInlineTraceDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import type { DocumentNode, GraphQLFormattedError, GraphQLSchema, OperationTypeNode, ParseOptions, ValidationRule } from 'graphql';
import { PersistedQueryCache } from './persistedQueryCache.js';
import type { SharedCache } from '../../ports/cache.js';
import type { GatewayContext } from '../schema/context.js';
import { createDocumentStore } from './documentStore.js';

/** What became of one request's operation; a held object, since Apollo runs resolvers on a copy of the context. */
export interface Resolved {
  operationName: string | null;
  operationType: OperationTypeNode | null;
  document: DocumentNode | null;
  /** Parsed and validated afresh, not found in the document store. */
  validated: boolean;
  /** The first error's code once formatted; null when the answer had none. */
  firstErrorCode: unknown;
}

export const newResolved = (): Resolved => ({ operationName: null, operationType: null, document: null, validated: false, firstErrorCode: null });

function resolvedPlugin(): ApolloServerPlugin<GatewayContext> {
  return {
    requestDidStart: () =>
      Promise.resolve({
        validationDidStart: ({ contextValue }) => {
          contextValue.resolved.validated = true;
          return Promise.resolve();
        },
        didResolveOperation: ({ contextValue, operationName, operation, document }) => {
          const resolved = contextValue.resolved;
          resolved.operationName = operationName ?? null;
          resolved.operationType = operation?.operation ?? null;
          resolved.document = document;
          return Promise.resolve();
        },
        willSendResponse: ({ contextValue, response }) => {
          const errors = response.body.kind === 'single' ? response.body.singleResult.errors : undefined;
          contextValue.resolved.firstErrorCode = errors?.[0]?.extensions?.code ?? (errors?.length ? 'error' : null);
          return Promise.resolve();
        },
      }),
  };
}

export interface ApolloOptions {
  schema: GraphQLSchema;
  introspection: boolean;
  cache: SharedCache;
  parseOptions: ParseOptions;
  validationRules: ValidationRule[];
  formatError: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;
}

export async function startApollo(options: ApolloOptions): Promise<ApolloServer<GatewayContext>> {
  const apollo = new ApolloServer<GatewayContext>({
    schema: options.schema,
    introspection: options.introspection,
    csrfPrevention: true,
    // main.ts owns the signals: Apollo's own handler would stop, then re-raise the signal and die
    stopOnTerminationSignals: false,
    includeStacktraceInErrorResponses: false,
    persistedQueries: { cache: new PersistedQueryCache(options.cache) },
    documentStore: createDocumentStore(),
    allowBatchedHttpRequests: false,
    parseOptions: options.parseOptions,
    validationRules: options.validationRules,
    // no "Did you mean ...?" where the schema is not to be explored
    hideSchemaDetailsFromClientErrors: !options.introspection,
    plugins: [
      ApolloServerPluginLandingPageDisabled(),
      // traces go through OpenTelemetry here
      ApolloServerPluginInlineTraceDisabled(),
      resolvedPlugin(),
    ],
    formatError: options.formatError,
  });
  await apollo.start();
  return apollo;
}
