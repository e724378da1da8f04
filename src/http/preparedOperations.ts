import type { IncomingHttpHeaders } from 'node:http';
import {
  execute,
  getNamedType,
  getOperationAST,
  isCompositeType,
  isObjectType,
  Kind,
  parse,
  specifiedRules,
  validate,
  type ConstDirectiveNode,
  type DocumentNode,
  type ExecutionResult,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLFormattedError,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ParseOptions,
  type SelectionSetNode,
  type ValidationRule,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { LRUCache } from 'lru-cache';
import { isJsonContentType } from './contentType.js';

/** Query texts longer than this are left to Apollo each time rather than remembered. */
const MAX_PREPARED_QUERY = 16 * 1024;
/** Characters the remembered query texts may hold at most. */
const PREPARED_TEXT_CHARS = 8 * 1024 * 1024;
/** Operation names remembered per query text. */
const MAX_OPERATIONS_PER_DOCUMENT = 16;
/** Distinct Accept headers whose content type is remembered. */
const MAX_ACCEPTS = 100;
/**
 * An operation that has run this many times is compiled for the runs after it. Compiling costs
 * about what validating does for a small query and four times as much for a wide one (0.25 ms
 * against 0.45 for the bench's query, 13 ms against 3.4 for 60 root fields: `npx tsx
 * bench/compile.ts`), so only operations that come back are worth it.
 */
export const COMPILE_AFTER_RUNS = 10;
/** Compiled operations kept (each holds its generated code); one dropped counts its runs anew. */
export const MAX_COMPILED = 100;

/** One operation of a valid document, ready to execute. */
export interface PreparedOperation {
  document: DocumentNode;
  /** The operation's name, or null when it has none (as Apollo's requestContext.operationName). */
  operationName: string | null;
  /** The Cache-Control header Apollo's cache-control plugin gives an answer without errors. */
  cacheControl: string;
  /** Times it has run; it is compiled once this reaches COMPILE_AFTER_RUNS. */
  runs: number;
}

/** A request the prepared path may answer: what Apollo would read from the POST body. */
export interface PreparedRequest {
  operation: PreparedOperation;
  variables: Record<string, unknown> | undefined;
  /** The operation name as sent (graphql-js picks the operation with it). */
  requestedName: string | undefined;
  /** The response's content type, as Apollo chose it for this Accept before. */
  contentType: string;
}

/** The answer, as Apollo would have given it: status, headers and the serialised body. */
export interface PreparedAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The first error's code after formatting, or null for an answer without errors. */
  firstErrorCode: unknown;
}

export interface PreparedOperationsOptions {
  schema: GraphQLSchema;
  parseOptions: ParseOptions;
  /** Validation rules beyond graphql-js's specified ones (the query limits). */
  validationRules: readonly ValidationRule[];
  /** The formatError Apollo is given: the prepared path formats errors the same way. */
  formatError: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;
  /** Distinct query texts kept; default 1,000. */
  maxDocuments?: number;
}

type CacheHint = { maxAge?: number; scope?: 'PUBLIC' | 'PRIVATE'; inheritMaxAge?: boolean };

/**
 * Runs repeated GraphQL queries without Apollo Server's request pipeline, giving the same answer
 * Apollo would: the same status, headers and bytes. An uncached request spent more than half of
 * its CPU in the pipeline around graphql-js (hooks, content negotiation, hashing the query, a
 * wrapper around every field resolver for cache hints): see BENCHMARKS.md.
 *
 * What takes this path: a POST with a JSON body without extensions (persisted queries stay with
 * Apollo), whose query text parsed and validated here with Apollo's rules, whose operation is a
 * query whose cache policy can be told from the document alone (below), and whose Accept header
 * Apollo has answered before (its content type is learnt from Apollo's answers, so the choice is
 * Apollo's own). Everything else, and every request that fails before a resolver runs (variables
 * that do not coerce), is handed to Apollo, which gives its usual errors.
 *
 * Operations that run again are compiled (graphql-jit: the query turned into a function that
 * resolves and completes exactly its fields), which takes graphql-js's per-field work (resolve
 * info, paths, type checks at every value) off the request: on a cold recommendations query it
 * was about 60 µs of 1 ms (BENCHMARKS.md). The first runs of an operation, one the compiler
 * refuses, and one whose compiled form was dropped (until it has run often enough again) run on
 * graphql-js's execute, which gives the same answer (test/http/preparedOperations.test.ts runs
 * both on the same requests and compares them with Apollo's).
 *
 * The cache policy. Apollo's plugin takes the minimum of the hints of the fields that resolved.
 * Here it is computed once, from every field in the document; the two agree when the minimum and
 * any PRIVATE scope come from a root field (root fields always resolve) and no @skip or @include
 * can remove one. Documents where they might not agree are left to Apollo.
 */
export class PreparedOperations {
  /** Answers given (`compiled` of them by compiled code), and requests handed over after all. */
  readonly stats = { answered: 0, compiled: 0, handedOver: 0 };
  private readonly schema: GraphQLSchema;
  private readonly parseOptions: ParseOptions;
  private readonly rules: readonly ValidationRule[];
  private readonly formatError: PreparedOperationsOptions['formatError'];
  /** Query text -> its document (null when it does not parse or validate) and its operations by requested name ('' for none). */
  private readonly documents: LRUCache<string, { document: DocumentNode | null; operations: Map<string, PreparedOperation | null> }>;
  /** Accept header ('' for none) -> the content type Apollo answered it with. */
  private readonly contentTypes = new Map<string, string>();
  /** Operation -> its compiled form, or a mark that the compiler refused it. */
  private readonly compiled = new LRUCache<PreparedOperation, CompiledQuery | { refused: true }>({
    max: MAX_COMPILED,
    dispose: (_compiled, operation) => (operation.runs = 0),
  });

  constructor(options: PreparedOperationsOptions) {
    this.schema = options.schema;
    this.parseOptions = options.parseOptions;
    this.rules = [...specifiedRules, ...options.validationRules];
    this.formatError = options.formatError;
    this.documents = new LRUCache({
      max: options.maxDocuments ?? 1_000,
      maxSize: PREPARED_TEXT_CHARS,
      sizeCalculation: (_value, key) => 1 + key.length,
    });
  }

  /** The request, when this path may answer it; null when Apollo must. */
  prepare(method: string, headers: IncomingHttpHeaders, body: unknown): PreparedRequest | null {
    if (method !== 'POST' || typeof body !== 'object' || body === null || Array.isArray(body)) return null;
    const contentType = this.contentTypes.get(headers.accept ?? '');
    if (contentType === undefined || !isJsonContentType(headers['content-type'])) return null;
    const { query, variables, operationName, extensions } = body as Record<string, unknown>;
    if (typeof query !== 'string' || query.length > MAX_PREPARED_QUERY || isRecord(extensions)) return null;
    const requestedName = typeof operationName === 'string' ? operationName : undefined;
    const operation = this.operation(query, requestedName);
    if (operation === null) return null;
    return { operation, variables: isRecord(variables) ? variables : undefined, requestedName, contentType };
  }

  /**
   * Executes a prepared request; null when it failed before any resolver ran (Apollo then answers
   * it, with its own status for variables that do not coerce).
   */
  async execute(request: PreparedRequest, contextValue: unknown): Promise<PreparedAnswer | null> {
    const compiled = this.compiledFor(request);
    const result: ExecutionResult = compiled
      ? await compiled.query(undefined, contextValue, request.variables ?? {})
      : await execute({
          schema: this.schema,
          document: request.operation.document,
          variableValues: request.variables,
          operationName: request.requestedName,
          contextValue,
        });
    if (result.data === undefined) {
      this.stats.handedOver += 1;
      return null;
    }
    this.stats.answered += 1;
    if (compiled) this.stats.compiled += 1;
    const headers: Record<string, string> = {};
    if (!result.errors || result.errors.length === 0) {
      headers['cache-control'] = request.operation.cacheControl;
      headers['content-type'] = request.contentType;
      return { status: 200, headers, body: `${JSON.stringify({ data: result.data, extensions: result.extensions })}\n`, firstErrorCode: null };
    }
    // As Apollo's normalizeAndFormatErrors: a code for every error, extensions.http taken out
    // into the response's status and headers, then formatError; an answer with errors is no-store.
    let status: number | undefined;
    const errors = result.errors.map((error) => {
      try {
        // (compiled code leaves extensions undefined where graphql-js gives {})
        const { http, ...extensions } = { ...error.extensions, code: error.extensions?.code ?? 'INTERNAL_SERVER_ERROR' } as Record<string, unknown>;
        if (isHttpHead(http)) {
          if (http.status !== undefined) status = http.status;
          for (const [name, value] of http.headers ?? []) headers[name.toLowerCase()] = value;
        } else if (http !== undefined) {
          extensions.http = http;
        }
        return this.formatError({ ...error.toJSON(), extensions }, error);
      } catch {
        return { message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } };
      }
    });
    headers['cache-control'] = 'no-store';
    headers['content-type'] = request.contentType;
    return {
      status: status ?? 200,
      headers,
      body: `${JSON.stringify({ errors, data: result.data, extensions: result.extensions })}\n`,
      firstErrorCode: errors[0]?.extensions?.code,
    };
  }

  /** The operation's compiled form once it has run COMPILE_AFTER_RUNS times; null until then. */
  private compiledFor({ operation, requestedName }: PreparedRequest): CompiledQuery | null {
    if (operation.runs < COMPILE_AFTER_RUNS) {
      operation.runs += 1;
      return null;
    }
    let compiled = this.compiled.get(operation);
    if (compiled === undefined) {
      // Stack traces are only taken for errors the compiled code makes itself (a null in a
      // non-null field, say); none reaches a client, and taking one costs microseconds.
      const made = compileQuery(this.schema, operation.document, requestedName, { disablingCapturingStackErrors: true });
      compiled = isCompiledQuery(made) ? made : { refused: true };
      this.compiled.set(operation, compiled);
    }
    return 'refused' in compiled ? null : compiled;
  }

  /** Learns the content type Apollo gave a single-result answer for an Accept header. */
  learnContentType(headers: IncomingHttpHeaders, contentType: string | undefined): void {
    const accept = headers.accept ?? '';
    if (contentType === undefined || this.contentTypes.has(accept) || accept.length > 256) return;
    if (this.contentTypes.size >= MAX_ACCEPTS) return;
    this.contentTypes.set(accept, contentType);
  }

  private operation(query: string, requestedName: string | undefined): PreparedOperation | null {
    let known = this.documents.get(query);
    if (known === undefined) {
      known = { document: this.parse(query), operations: new Map() };
      this.documents.set(query, known);
    }
    if (known.document === null) return null;
    const name = requestedName ?? '';
    let operation = known.operations.get(name);
    if (operation === undefined) {
      // names not in the document are remembered too, so the map is bounded: past that, Apollo
      if (known.operations.size >= MAX_OPERATIONS_PER_DOCUMENT) return null;
      operation = this.resolve(known.document, requestedName);
      known.operations.set(name, operation);
    }
    return operation;
  }

  /** The document when it parses and validates with Apollo's rules; null otherwise. */
  private parse(query: string): DocumentNode | null {
    let document: DocumentNode;
    try {
      document = parse(query, this.parseOptions);
    } catch {
      return null;
    }
    return validate(this.schema, document, this.rules).length === 0 ? document : null;
  }

  private resolve(document: DocumentNode, requestedName: string | undefined): PreparedOperation | null {
    const operation = getOperationAST(document, requestedName);
    if (!operation || operation.operation !== 'query') return null;
    const cacheControl = staticCacheControl(this.schema, document, operation);
    if (cacheControl === null) return null;
    return { document, operationName: operation.name?.value ?? null, cacheControl, runs: 0 };
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);

function isHttpHead(value: unknown): value is { status?: number; headers?: Map<string, string> } {
  if (typeof value !== 'object' || value === null) return false;
  const { status, headers } = value as { status?: unknown; headers?: unknown };
  return (status === undefined || typeof status === 'number') && (headers === undefined || headers instanceof Map);
}

/**
 * The Cache-Control header Apollo's cache-control plugin (defaultMaxAge 0) gives an answer
 * without errors to this operation, when it does not depend on which fields resolve; null when it
 * might (a hint below the root that is lower or PRIVATE, @skip/@include, an abstract type, an
 * introspection field).
 */
export function staticCacheControl(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): string | null {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const root = schema.getQueryType();
  if (!root) return null;
  let rootMaxAge = Infinity;
  let rootPrivate = false;
  let maxAge = Infinity;
  let isPrivate = false;
  let eligible = true;

  const visit = (selectionSet: SelectionSetNode, parent: GraphQLCompositeType, atRoot: boolean): void => {
    for (const selection of selectionSet.selections) {
      if (!eligible) return;
      if (selection.directives?.some(isConditional)) {
        eligible = false;
        return;
      }
      if (selection.kind === Kind.INLINE_FRAGMENT || selection.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = selection.kind === Kind.FRAGMENT_SPREAD ? fragments.get(selection.name.value) : selection;
        if (!fragment || fragment.directives?.some(isConditional)) {
          eligible = false;
          return;
        }
        const condition = fragment.typeCondition ? schema.getType(fragment.typeCondition.name.value) : parent;
        if (condition !== parent) {
          eligible = false;
          return;
        }
        visit(fragment.selectionSet, parent, atRoot);
        continue;
      }
      const name = selection.name.value;
      if (name === '__typename') continue;
      if (name.startsWith('__') || !isObjectType(parent)) {
        eligible = false;
        return;
      }
      const field = parent.getFields()[name];
      if (!field) {
        eligible = false;
        return;
      }
      const hint = fieldHint(field, atRoot);
      if (hint.maxAge !== undefined) maxAge = Math.min(maxAge, hint.maxAge);
      if (hint.scope === 'PRIVATE') isPrivate = true;
      if (atRoot) {
        rootMaxAge = Math.min(rootMaxAge, hint.maxAge ?? Infinity);
        if (hint.scope === 'PRIVATE') rootPrivate = true;
      }
      const target = getNamedType(field.type);
      if (selection.selectionSet) {
        if (!isCompositeType(target)) {
          eligible = false;
          return;
        }
        visit(selection.selectionSet, target, false);
      }
    }
  };
  visit(operation.selectionSet, root, true);
  if (!eligible || maxAge !== rootMaxAge || isPrivate !== rootPrivate || !Number.isFinite(maxAge)) return null;
  return maxAge > 0 ? `max-age=${maxAge}, ${isPrivate ? 'private' : 'public'}` : 'no-store';
}

const isConditional = (directive: { name: { value: string } }): boolean =>
  directive.name.value === 'skip' || directive.name.value === 'include';

/** One field's hint, as the plugin's willResolveField computes it (defaultMaxAge 0). */
function fieldHint(field: GraphQLField<unknown, unknown>, atRoot: boolean): CacheHint {
  const policy: CacheHint = {};
  const replace = (hint: CacheHint): void => {
    if (hint.maxAge !== undefined) policy.maxAge = hint.maxAge;
    if (hint.scope !== undefined) policy.scope = hint.scope;
  };
  const target = getNamedType(field.type);
  let inheritMaxAge = false;
  if (isCompositeType(target)) {
    const typeHint = annotation(target.astNode?.directives, target.extensionASTNodes.map((node) => node.directives));
    replace(typeHint);
    inheritMaxAge = !!typeHint.inheritMaxAge;
  }
  const own = annotation(field.astNode?.directives, []);
  if (own.inheritMaxAge && policy.maxAge === undefined) {
    inheritMaxAge = true;
    if (own.scope) replace({ scope: own.scope });
  } else {
    replace(own);
  }
  if (policy.maxAge === undefined && ((isCompositeType(target) && !inheritMaxAge) || atRoot)) policy.maxAge = 0;
  return policy;
}

/** A @cacheControl directive's hint, as the plugin reads it from the SDL. */
function annotation(
  directives: readonly ConstDirectiveNode[] | undefined,
  more: readonly (readonly ConstDirectiveNode[] | undefined)[],
): CacheHint {
  for (const list of [directives, ...more]) {
    const directive = list?.find((d) => d.name.value === 'cacheControl');
    if (!directive?.arguments) continue;
    const argument = (name: string) => directive.arguments!.find((a) => a.name.value === name)?.value;
    const scopeValue = argument('scope');
    const scopeText = scopeValue?.kind === Kind.ENUM ? scopeValue.value : undefined;
    const scope = scopeText === 'PUBLIC' || scopeText === 'PRIVATE' ? scopeText : undefined;
    const inherit = argument('inheritMaxAge');
    if (inherit?.kind === Kind.BOOLEAN && inherit.value) return { inheritMaxAge: true, ...(scope ? { scope } : {}) };
    const maxAge = argument('maxAge');
    return { ...(maxAge?.kind === Kind.INT ? { maxAge: parseInt(maxAge.value, 10) } : {}), ...(scope ? { scope } : {}) };
  }
  return {};
}
