import type { ApolloServerPlugin } from '@apollo/server';
import { trace } from '@opentelemetry/api';
import { isErrorCode } from '../errors.js';
import type { GatewayMetrics } from './metrics.js';
import type { RequestRecord } from './requestScope.js';
import type { PrincipalModel } from '../ports/backend.js';
import { promised } from '../ports/promised.js';

/**
 * Counts and times each GraphQL operation by operation name and outcome, and names the request's
 * span and access-log line after the operation. The outcome is `ok` or the first error's code,
 * read after formatError, so it is always from the closed set.
 */
export function observabilityPlugin<T extends { request?: RequestRecord; principal?: PrincipalModel | null }>(metrics: GatewayMetrics): ApolloServerPlugin<T> {
  return {
    requestDidStart: () => promised(() => {
      const started = performance.now();
      let operation = metrics.operationLabel(null, false);
      return {
        didResolveOperation: (requestContext) => promised(() => {
          operation = metrics.operationLabel(requestContext.operationName, true);
          const record = requestContext.contextValue.request;
          if (record) record.operation = operation;
          const span = trace.getActiveSpan();
          span?.setAttribute('graphql.operation.name', operation);
          if (requestContext.operation) span?.setAttribute('graphql.operation.type', requestContext.operation.operation);
        }),
        willSendResponse: (requestContext) => promised(() => {
          const { body } = requestContext.response;
          const errors = body.kind === 'single' ? body.singleResult.errors : undefined;
          const code = errors?.[0]?.extensions?.code;
          const outcome = errors === undefined || errors.length === 0 ? 'ok' : isErrorCode(code) ? code : 'error';
          const { request, principal } = requestContext.contextValue;
          metrics.graphqlAnswered(operation, outcome, started, request, principal ?? null);
        }),
      };
    }),
  };
}
