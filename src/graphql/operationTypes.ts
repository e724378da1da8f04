import { GraphQLError, type ValidationContext, type ValidationRule } from 'graphql';

/**
 * Refuses an operation of a type the schema has no root for (a `subscription`: this gateway serves
 * none), as a validation error (400, GRAPHQL_VALIDATION_FAILED) with what it does serve. graphql-js
 * validates such an operation's fields against no type at all, passes it, and its execute then
 * throws, which the gateway answered as an internal error (and logged at error level).
 */
export const operationTypesRule: ValidationRule = (context: ValidationContext) => ({
  OperationDefinition(node) {
    if (context.getSchema().getRootType(node.operation) !== undefined) return;
    context.reportError(new GraphQLError(`This gateway serves queries and mutations, not ${node.operation}s.`, { nodes: node }));
  },
});
