import type { IncomingHttpHeaders } from 'node:http';
import {
  execute, getNamedType, isEnumType, isNonNullType, isScalarType, Kind, OperationTypeNode, typeFromAST, visit,
  type DocumentNode, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { LRUCache } from 'lru-cache';
import type { Resolved } from './apollo.js';
import type { GatewayContext } from '../schema/context.js';
import { documentWeight } from './documentStore.js';

const ACCEPTED_BYTES = 32 * 1024 * 1024;
const MAX_QUERY = 16 * 1024;
const BODY_KEYS = new Set(['query', 'operationName', 'variables']);

interface Accepted {
  document: DocumentNode;
  operationName: string | undefined;
  resolved: Pick<Resolved, 'operationName' | 'operationType'>;
  headers: Readonly<Record<string, string>>;
  /** graphql-jit's form, made on the first run; null where it may coerce variables unlike graphql-js. */
  compiled: CompiledQuery | null | undefined;
}

export interface TakeoverRequest {
  key: string;
  variables: Record<string, unknown> | undefined;
}

export interface TakeoverAnswer {
  status: 200;
  headers: Record<string, string>;
  body: string;
}

/** Answers again, without Apollo's pipeline, exact queries Apollo already answered cleanly (same text,
 * name, Accept, Content-Type) with Apollo's headers. Anything else, or any run with an error, goes to Apollo. */
export class Takeover {
  private readonly accepted: LRUCache<string, Accepted>;
  private readonly counts = { answered: 0, compiled: 0, handedBack: 0 };

  /** `schema` is a copy Apollo never wraps, so graphql-jit can inline its fields. */
  constructor(
    private readonly schema: GraphQLSchema,
    maxOperations: number,
  ) {
    this.accepted = new LRUCache({ max: maxOperations, maxSize: ACCEPTED_BYTES, sizeCalculation: (entry) => documentWeight(entry.document) });
  }

  /** The request's key; null unless a plain JSON POST of a query. */
  static requestOf(method: string, headers: IncomingHttpHeaders, body: unknown): TakeoverRequest | null {
    if (method !== 'POST' || typeof body !== 'object' || body === null || Array.isArray(body)) return null;
    const { query, operationName, variables } = body as { query?: unknown; operationName?: unknown; variables?: unknown };
    if (typeof query !== 'string' || query.length > MAX_QUERY) return null;
    if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return null;
    if (variables !== undefined && variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) return null;
    for (const name in body) if (!BODY_KEYS.has(name)) return null;
    // an empty name is a name Apollo looks for, unlike none
    const name = typeof operationName === 'string' ? `=${operationName}` : '';
    const key = `${headers.accept ?? ''}\n${headers['content-type'] ?? ''}\n${name}\n${query}`;
    return { key, variables: (variables ?? undefined) as Record<string, unknown> | undefined };
  }

  learn(request: TakeoverRequest, resolved: Resolved, headers: Record<string, string>): void {
    const { document, operationType } = resolved;
    if (document === null || operationType !== OperationTypeNode.QUERY || this.accepted.has(request.key)) return;
    if (selectsEntities(document)) return;
    this.accepted.set(request.key, {
      document,
      operationName: resolved.operationName ?? undefined,
      resolved: { operationName: resolved.operationName, operationType },
      headers: { ...headers },
      compiled: undefined,
    });
  }

  async answer(request: TakeoverRequest, context: GatewayContext): Promise<TakeoverAnswer | null> {
    const accepted = this.accepted.get(request.key);
    if (accepted === undefined) return null;
    const compiled = this.compiledOf(accepted);
    const result: ExecutionResult = compiled
      ? await compiled.query(undefined, context, request.variables ?? {})
      : await execute({ schema: this.schema, document: accepted.document, variableValues: request.variables, operationName: accepted.operationName, contextValue: context });
    if (result.data == null || (result.errors !== undefined && result.errors.length > 0)) {
      // Apollo answers it from scratch and charges the budget again
      this.counts.handedBack += 1;
      context.answerBudget.reset();
      return null;
    }
    this.counts.answered += 1;
    if (compiled) this.counts.compiled += 1;
    Object.assign(context.resolved, accepted.resolved);
    return { status: 200, headers: { ...accepted.headers }, body: `${JSON.stringify({ data: result.data, extensions: result.extensions })}\n` };
  }

  private compiledOf(accepted: Accepted): CompiledQuery | null {
    if (accepted.compiled === undefined) {
      accepted.compiled = null;
      if (scalarVariablesOnly(this.schema, accepted.document, accepted.operationName)) {
        const made = compileQuery(this.schema, accepted.document, accepted.operationName, { disablingCapturingStackErrors: true });
        if (isCompiledQuery(made)) accepted.compiled = made;
      }
    }
    return accepted.compiled;
  }

  get stats(): Readonly<{ answered: number; compiled: number; handedBack: number; kept: number }> {
    return { ...this.counts, kept: this.accepted.size };
  }
}

/** `_entities` sets its cache hint from its representations: its policy is not the operation's. */
function selectsEntities(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Field(node) {
      if (node.name.value === '_entities') found = true;
    },
  });
  return found;
}

/** graphql-jit coerces some input objects and defaulted required variables unlike graphql-js: those run there. */
function scalarVariablesOnly(schema: GraphQLSchema, document: DocumentNode, operationName: string | undefined): boolean {
  const operation = document.definitions.find(
    (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION && (operationName === undefined || d.name?.value === operationName),
  );
  if (operation === undefined) return false;
  return (operation.variableDefinitions ?? []).every((definition) => {
    const type = typeFromAST(schema, definition.type);
    if (type === undefined || (isNonNullType(type) && definition.defaultValue !== undefined)) return false;
    const named = getNamedType(type);
    return isScalarType(named) || isEnumType(named);
  });
}
