import { GraphQLError, type ValidationContext, type ValidationRule } from 'graphql';

/** Refuses an operation type the schema has no root for (a subscription) as a validation error:
 * graphql-js passes it and its execute then throws, an internal error. */
export const operationTypesRule: ValidationRule = (context: ValidationContext) => ({
  OperationDefinition(node) {
    if (context.getSchema().getRootType(node.operation) !== undefined) return;
    context.reportError(new GraphQLError(`This gateway serves queries and mutations, not ${node.operation}s.`, { nodes: node }));
  },
});
