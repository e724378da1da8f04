import type { IncomingHttpHeaders } from 'node:http';
import {
  execute,
  getNamedType,
  GraphQLError,
  getOperationAST,
  isCompositeType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  parse,
  specifiedRules,
  OperationTypeNode,
  validate,
  type ASTVisitor,
  type ConstDirectiveNode,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ParseOptions,
  type SelectionSetNode,
  typeFromAST,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { LRUCache } from 'lru-cache';
import { isJsonContentType } from './contentType.js';
import { makeTemplate, signatureOf, variablesFor, type LiteralTemplate } from './literalTemplates.js';
import {
  checkEnvelope,
  formatErrors,
  type Envelope,
  getNotQueryError,
  refusalAnswer,
  syntaxError,
  validationError,
  type FormatError,
  type GraphQLAnswer,
} from './envelope.js';
import { DEFAULT_PREPARED_DOCUMENTS } from '../config/defaults.js';
import { documentWeight } from './documentStore.js';
import { fragmentsOf } from './limits.js';
import { ClockDependentError } from './scalars.js';
import type { GatewayContext } from './context.js';
import { itemListPlan, type ItemListPlan } from './itemFragments.js';

/**
 * Query texts longer than this are checked (and answered) each time rather than remembered: a
 * document holds its whole source text (loc.source), and a text can be mostly a comment.
 */
const MAX_PREPARED_QUERY = 16 * 1024;
/**
 * Bytes the remembered query texts, their documents (as documentWeight estimates them) and the
 * answers to those that fail may hold at most. A document holds its tokens as well as its text:
 * sized by its characters alone, a thousand dense 3.5 KB texts sent without credentials took a
 * gateway from 130 MB to 550 MB.
 */
const PREPARED_BYTES = 32 * 1024 * 1024;
/** Bytes (documentWeight) the compiled operations' documents may hold at most. */
const COMPILED_BYTES = 16 * 1024 * 1024;
/** Operation names remembered per query text. */
const MAX_OPERATIONS_PER_DOCUMENT = 16;
/** The content type of a refusal of the gateway's own for an Accept Apollo has not answered yet (Apollo's for no Accept). */
const DEFAULT_CONTENT_TYPE = 'application/json; charset=utf-8';
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
  /** A query or a mutation (a subscription is Apollo's). */
  type: OperationTypeNode.QUERY | OperationTypeNode.MUTATION;
  /**
   * Whether graphql-jit runs it as graphql-js does; false keeps it on graphql-js's execute (still
   * without Apollo's pipeline): see compilesAlike.
   */
  compilable: boolean;
  /**
   * Whether variables hold an array where graphql-jit would take it for an input object and
   * graphql-js refuses it (arraysForObjects); null when they cannot (recordEvents' cannot).
   */
  arrayForObject: ((variables: Record<string, unknown> | undefined) => boolean) | null;
  /** The Cache-Control header Apollo's cache-control plugin gives an answer without errors. */
  cacheControl: string;
  /** Set when the answer is one list of records, serialised from each record's text (itemFragments.ts). */
  itemList: ItemListPlan | null;
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
  /**
   * Set when the operation is a template whose variables stand for this text's literals
   * (src/http/literalTemplates.ts): the text and the variables as sent, for running the text on
   * its own document when the template's answer has errors.
   */
  literals?: { query: string; variables: Record<string, unknown> | undefined };
  /** Apollo's answer to a request it refuses before running it (parse, validation, envelope): execute gives it as it is. */
  refusal?: PreparedAnswer;
}

/** The answer, as Apollo would have given it: status, headers and the serialised body. */
export type PreparedAnswer = GraphQLAnswer;

/**
 * What a refused request counts as: Apollo's observability plugin labels a request whose
 * operation never resolved `invalid` (GatewayMetrics.operationLabel(name, false)).
 */
const REFUSED: PreparedOperation = Object.freeze({
  document: { kind: Kind.DOCUMENT, definitions: [] },
  operationName: 'invalid',
  type: OperationTypeNode.QUERY,
  compilable: false,
  arrayForObject: null,
  cacheControl: 'no-store',
  itemList: null,
  runs: 0,
}) as PreparedOperation;

/** A query text once checked: its document and operations, or Apollo's answer to it (without a content type), or a text to leave to Apollo. */
type Known =
  | { document: DocumentNode; operations: Map<string | undefined, PreparedOperation | null> }
  | { refused: Omit<PreparedAnswer, 'headers'> & { headers: Record<string, string> }; clockDependent?: true }
  | { handOver: true };

export interface PreparedOperationsOptions {
  schema: GraphQLSchema;
  parseOptions: ParseOptions;
  /** Validation rules beyond graphql-js's specified ones (the query limits). */
  validationRules: readonly ValidationRule[];
  /** The formatError Apollo is given: the prepared path formats errors the same way. */
  formatError: FormatError;
  /** Distinct query texts kept; default 1,000. */
  maxDocuments?: number;
  /**
   * Apollo's `introspection`: false adds its NoIntrospection rule. Left out, a document that
   * fails validation and names __schema or __type is left to Apollo.
   */
  introspection?: boolean;
  /**
   * Apollo's `hideSchemaDetailsFromClientErrors`: true takes "Did you mean ...?" out of
   * validation errors. Left out, a document whose errors suggest something is left to Apollo.
   */
  hideSchemaDetailsFromClientErrors?: boolean;
}

type Prepared = Extract<Known, { document: DocumentNode }>;
/** A signature's template with its operations, or a mark that its texts take the usual path. */
type Template = (LiteralTemplate & { known: Prepared }) | { unusable: true };

/** Bytes the templates (their signatures and documents, as documentWeight estimates them) may hold at most. */
const TEMPLATE_BYTES = 32 * 1024 * 1024;

type CacheHint = { maxAge?: number; scope?: 'PUBLIC' | 'PRIVATE'; inheritMaxAge?: boolean };

/**
 * Runs repeated GraphQL operations without Apollo Server's request pipeline, giving the same answer
 * Apollo would: the same status, headers and bytes. An uncached request spent more than half of
 * its CPU in the pipeline around graphql-js (hooks, content negotiation, hashing the query, a
 * wrapper around every field resolver for cache hints): see BENCHMARKS.md. A batch of 5,000
 * events through recordEvents spent 44% of its CPU in graphql-js's coercion of its variables,
 * which compiled code does in a fraction of that.
 *
 * What takes this path: a request whose Accept header Apollo has answered before (its content
 * type is learnt from Apollo's answers, so the choice is Apollo's own) and whose envelope passes
 * Apollo's checks (src/graphql/envelope.ts). Of those, a query text that does not parse or validate
 * (with Apollo's rules, the gateway's limits first and alone: src/graphql/limits.ts) is answered here with
 * Apollo's own refusal, remembered, so a repeated bad document costs a lookup and is never
 * validated twice; so is a GET of a mutation. A POST without extensions (persisted queries stay
 * with Apollo) whose operation is a query or a mutation whose cache policy can be told from the
 * document alone (below) is executed here; a mutation's root fields one after the other, as
 * graphql-js runs them. Everything else, and every request that fails before a resolver runs
 * (variables that do not coerce), is handed to Apollo, which gives its usual answers.
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
  /**
   * Answers given (`compiled` of them by compiled code, `fromRecords` serialised from their
   * records' texts), requests handed over after all, and requests refused as Apollo would.
   */
  readonly stats = { answered: 0, compiled: 0, handedOver: 0, refused: 0, templated: 0, retried: 0, fromRecords: 0 };
  private readonly schema: GraphQLSchema;
  private readonly parseOptions: ParseOptions;
  /** The gateway's own rules (the query limits): cheap, and run alone first. */
  private readonly firstRules: readonly ValidationRule[];
  /** graphql-js's rules, and Apollo's NoIntrospection where introspection is off: only for a document within the limits. */
  private readonly laterRules: readonly ValidationRule[];
  private readonly introspection: boolean | undefined;
  private readonly hideSuggestions: boolean | undefined;
  private readonly formatError: FormatError;
  /** Query text -> what checking it gave: its document and operations by requested name (undefined for none), or a refusal. */
  private readonly documents: LRUCache<string, Known>;
  /** A text's signature (its tokens, literals marked) -> the template its texts share. */
  private readonly templates: LRUCache<string, Template>;
  private readonly maxTokens: number;
  /** Accept header ('' for none) -> the content type Apollo answered it with; the least recently used go first. */
  private readonly contentTypes = new LRUCache<string, string>({ max: MAX_ACCEPTS });
  /** Operation -> its compiled form, or a mark that the compiler refused it. */
  private readonly compiled = new LRUCache<PreparedOperation, CompiledQuery | { refused: true }>({
    max: MAX_COMPILED,
    // a compiled operation holds its document, and so the document's whole source text and tokens
    maxSize: COMPILED_BYTES,
    sizeCalculation: (_compiled, operation) => documentWeight(operation.document),
    dispose: (_compiled, operation) => (operation.runs = 0),
  });

  constructor(options: PreparedOperationsOptions) {
    this.schema = options.schema;
    this.parseOptions = options.parseOptions;
    this.firstRules = options.validationRules;
    this.introspection = options.introspection;
    this.hideSuggestions = options.hideSchemaDetailsFromClientErrors;
    this.laterRules = options.introspection === false ? [...specifiedRules, NoIntrospection] : specifiedRules;
    this.formatError = options.formatError;
    this.documents = new LRUCache({
      max: options.maxDocuments ?? DEFAULT_PREPARED_DOCUMENTS,
      maxSize: PREPARED_BYTES,
      // a document's source is the key itself (the same string), which documentWeight counts; a refusal holds the text and its answer
      sizeCalculation: (value, key) => ('document' in value ? documentWeight(value.document) : 1 + key.length + ('refused' in value ? value.refused.body.length : 0)),
    });
    this.maxTokens = options.parseOptions.maxTokens ?? Infinity;
    this.templates = new LRUCache({
      max: options.maxDocuments ?? 1_000,
      maxSize: TEMPLATE_BYTES,
      // the key, and the first text's source and tokens, which the template's document holds
      sizeCalculation: (value, key) => 1 + key.length + ('unusable' in value ? 0 : documentWeight(value.document)),
    });
  }

  /**
   * The request, when this path may answer it (a refusal included); null when Apollo must.
   * `search` is the URL's query string ('' or '?...'), which a GET's request is read from;
   * without it, a GET is left to Apollo.
   */
  prepare(method: string, headers: IncomingHttpHeaders, body: unknown, search?: string): PreparedRequest | null {
    if (method === 'GET' && search === undefined) return null;
    return this.fromEnvelope(method, headers, checkEnvelope(method, headers, search ?? '', body));
  }

  /**
   * As prepare, for a request whose envelope the caller has checked already (checkEnvelope,
   * once per request, before choosing a path).
   */
  fromEnvelope(method: string, headers: IncomingHttpHeaders, envelope: Envelope): PreparedRequest | null {
    const contentType = this.contentTypeFor(headers);
    if (!envelope.ok) {
      // a rule of the gateway's own: never handed to Apollo, which would answer the request
      if (envelope.stage === 'gateway') {
        const type = contentType ?? DEFAULT_CONTENT_TYPE;
        return this.refused(refusalAnswer(envelope.stage, [envelope.error], type, this.formatError), type);
      }
      // Apollo's own refusals before its pipeline are cheap, and Apollo counts none of them
      if (envelope.stage === 'http' || contentType === undefined) return null;
      return this.refused(refusalAnswer(envelope.stage, [envelope.error], contentType, this.formatError), contentType);
    }
    if (contentType === undefined) return null;
    const { query, operationName: requestedName, variables, extensions } = envelope.request;
    if (query === undefined || (method === 'POST' && !isJsonContentType(headers['content-type']))) return null;
    if (method === 'POST' && extensions === undefined && !this.documents.has(query)) {
      const templated = this.fromTemplate(query, requestedName, variables, contentType);
      if (templated !== undefined) return templated;
    }
    const known = this.known(query);
    if ('handOver' in known) return null;
    if ('refused' in known) {
      const { headers: refusedHeaders, ...rest } = known.refused;
      return this.refused({ ...rest, headers: { ...refusedHeaders, 'content-type': contentType } }, contentType);
    }
    if (method === 'GET') {
      const operation = getOperationAST(known.document, requestedName);
      if (operation && operation.operation !== OperationTypeNode.QUERY) {
        return this.refused(refusalAnswer('pipeline', [getNotQueryError(operation.operation)], contentType, this.formatError), contentType);
      }
      return null;
    }
    // persisted queries (and any other extension) are Apollo's
    if (extensions !== undefined) return null;
    const operation = this.operation(known, requestedName);
    if (operation === null) return null;
    return { operation, variables, requestedName, contentType };
  }

  private refused(answer: PreparedAnswer, contentType: string): PreparedRequest {
    return { operation: REFUSED, variables: undefined, requestedName: undefined, contentType, refusal: answer };
  }

  /**
   * Executes a prepared request; null when it failed before any resolver ran (Apollo then answers
   * it, with its own status for variables that do not coerce).
   */
  async execute(request: PreparedRequest, contextValue: unknown): Promise<PreparedAnswer | null> {
    if (request.refusal) {
      this.stats.refused += 1;
      return request.refusal;
    }
    let compiled = this.compiledFor(request);
    if (compiled !== null && request.operation.arrayForObject?.(request.variables)) compiled = null;
    const plan = request.operation.itemList !== null && (contextValue as GatewayContext).backend?.recordsAreValues === true ? request.operation.itemList : null;
    if (plan !== null) (contextValue as GatewayContext).itemLists = [];
    const result: ExecutionResult = compiled
      ? await compiled.query(undefined, contextValue, request.variables ?? {})
      : await execute({
          schema: this.schema,
          document: request.operation.document,
          variableValues: request.variables,
          operationName: request.requestedName,
          contextValue,
        });
    if (request.literals !== undefined && (result.data === undefined || (result.errors !== undefined && result.errors.length > 0))) {
      // the template's errors carry its first text's locations: the text runs on its own document
      this.stats.retried += 1;
      const own = this.ownDocument(request, request.literals);
      return own === null ? null : this.execute(own, contextValue);
    }
    if (result.data === undefined) {
      this.stats.handedOver += 1;
      return null;
    }
    this.stats.answered += 1;
    if (compiled) this.stats.compiled += 1;
    if (request.literals !== undefined) this.stats.templated += 1;
    const headers: Record<string, string> = {};
    if (!result.errors || result.errors.length === 0) {
      headers['cache-control'] = request.operation.cacheControl;
      headers['content-type'] = request.contentType;
      const lists = plan === null || result.extensions !== undefined ? undefined : (contextValue as GatewayContext).itemLists;
      const fromRecords = lists?.length === 1 ? plan!.serialise(result.data as Record<string, unknown>, lists[0]!) : null;
      if (fromRecords !== null) this.stats.fromRecords += 1;
      const body = fromRecords ?? `${JSON.stringify({ data: result.data, extensions: result.extensions })}\n`;
      return { status: 200, headers, body, firstErrorCode: null };
    }
    // as Apollo's normalizeAndFormatErrors; an answer with errors is no-store
    const formatted = formatErrors(result.errors, this.formatError);
    Object.assign(headers, formatted.headers);
    const errors = formatted.errors;
    const status = formatted.status;
    headers['cache-control'] = 'no-store';
    headers['content-type'] = request.contentType;
    return {
      status: status ?? 200,
      headers,
      body: `${JSON.stringify({ errors, data: result.data, extensions: result.extensions })}\n`,
      firstErrorCode: errors[0]?.extensions?.code,
    };
  }

  /**
   * The request on its signature's template (its literals as variables); null when Apollo must
   * answer it; undefined when it takes the usual path (no template, or a literal that keeps it
   * off the template). A signature's first text makes the template, from its own document once
   * that validates; the text itself is then not remembered, so texts that differ only in their
   * literals take one entry, not one each.
   */
  private fromTemplate(
    query: string,
    requestedName: string | undefined,
    variables: Record<string, unknown> | undefined,
    contentType: string,
  ): PreparedRequest | null | undefined {
    if (query.length > MAX_PREPARED_QUERY) return undefined;
    const signature = signatureOf(query, this.maxTokens);
    if (signature === null) return undefined;
    let template = this.templates.get(signature.key);
    if (template === undefined) {
      const own = this.check(query);
      if (!('document' in own)) {
        // a text of the signature that fails says nothing of the others
        if (!('clockDependent' in own)) this.documents.set(query, own);
        return undefined;
      }
      template = this.templateOf(own.document, signature);
      this.templates.set(signature.key, template);
      if ('unusable' in template) {
        this.documents.set(query, own);
        return undefined;
      }
    }
    if ('unusable' in template) return undefined;
    const hoisted = variablesFor(template, signature.literals);
    if (hoisted === null) return undefined;
    const operation = this.operation(template.known, requestedName);
    if (operation === null) return null;
    return { operation, variables: variables === undefined ? hoisted : { ...variables, ...hoisted }, requestedName, contentType, literals: { query, variables } };
  }

  /** The template of a valid document, validated as its own document was; a mark when there is none. */
  private templateOf(document: DocumentNode, signature: NonNullable<ReturnType<typeof signatureOf>>): Template {
    // a templated request whose answer has errors runs again on its own document: never a mutation's
    if (document.definitions.some((d) => d.kind === Kind.OPERATION_DEFINITION && d.operation !== OperationTypeNode.QUERY)) return { unusable: true };
    const template = makeTemplate(this.schema, document, signature);
    if (template === null) return { unusable: true };
    let errors = validate(this.schema, template.document, this.firstRules);
    if (errors.length === 0) errors = validate(this.schema, template.document, this.laterRules);
    if (errors.length > 0) return { unusable: true };
    return { ...template, known: { document: template.document, operations: new Map() } };
  }

  /** A templated request as its own text's: its document, and the variables as sent. */
  private ownDocument(request: PreparedRequest, literals: NonNullable<PreparedRequest['literals']>): PreparedRequest | null {
    const known = this.known(literals.query);
    if (!('document' in known)) return null;
    const operation = this.operation(known, request.requestedName);
    if (operation === null) return null;
    return { operation, variables: literals.variables, requestedName: request.requestedName, contentType: request.contentType };
  }

  /** The operation's compiled form once it has run COMPILE_AFTER_RUNS times; null until then. */
  private compiledFor({ operation, requestedName }: PreparedRequest): CompiledQuery | null {
    if (!operation.compilable) return null;
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

  /** Templates kept (src/http/literalTemplates.ts), usable or not. */
  get templateCount(): number {
    return this.templates.size;
  }

  /** The content type Apollo answered this Accept header with, once it has; undefined before. */
  contentTypeFor(headers: IncomingHttpHeaders): string | undefined {
    return this.contentTypes.get(headers.accept ?? '');
  }

  /** Learns the content type Apollo gave a single-result answer for an Accept header. */
  learnContentType(headers: IncomingHttpHeaders, contentType: string | undefined): void {
    const accept = headers.accept ?? '';
    if (contentType === undefined || this.contentTypes.has(accept) || accept.length > 256) return;
    this.contentTypes.set(accept, contentType);
  }

  /** What checking the query text gives, remembered when the text is not long. */
  private known(query: string): Known {
    let known = this.documents.get(query);
    if (known === undefined) {
      known = this.check(query);
      if (query.length <= MAX_PREPARED_QUERY && !('clockDependent' in known)) this.documents.set(query, known);
    }
    return known;
  }

  private operation(known: Prepared, requestedName: string | undefined): PreparedOperation | null {
    // no name and the name '' differ: graphql-js finds no operation named ''
    const name = requestedName;
    let operation = known.operations.get(name);
    if (operation === undefined) {
      // names not in the document are remembered too, so the map is bounded: past that, Apollo
      if (known.operations.size >= MAX_OPERATIONS_PER_DOCUMENT) return null;
      operation = this.resolve(known.document, requestedName);
      known.operations.set(name, operation);
    }
    return operation;
  }

  /**
   * Parses and validates a query text as Apollo does, with its rules, the gateway's own first and
   * alone: the limits are cheap, and a document over them is never walked by the others (some
   * are quadratic in what the limits bound). Apollo, validating with all of them at once, gives
   * the same errors (queryLimitsRule, src/graphql/limits.ts).
   */
  private check(query: string): Known {
    let document: DocumentNode;
    try {
      document = parse(query, this.parseOptions);
    } catch (error) {
      return this.refusal([syntaxError(error)]);
    }
    let errors = validate(this.schema, document, this.firstRules);
    if (errors.length === 0) errors = validate(this.schema, document, this.laterRules);
    if (errors.length === 0) return { document, operations: new Map() };
    // what Apollo's options would change, when they were not given
    if (this.introspection === undefined && /__schema|__type/.test(query)) return { handOver: true };
    if (this.hideSuggestions === undefined && errors.some((error) => / ?Did you mean(.+?)\?$/.test(error.message))) return { handOver: true };
    if (this.hideSuggestions) {
      for (const error of errors) error.message = error.message.replace(/ ?Did you mean(.+?)\?$/, '');
    }
    const refusal = this.refusal(errors.map(validationError));
    return errors.some((error) => error instanceof ClockDependentError) ? { ...refusal, clockDependent: true } : refusal;
  }

  private refusal(errors: GraphQLError[]): Known & { refused: unknown } {
    // the content type is the request's, added when it is answered
    const { headers: { 'content-type': _contentType, ...headers }, ...rest } = refusalAnswer('pipeline', errors, '', this.formatError);
    return { refused: { ...rest, headers } };
  }

  private resolve(document: DocumentNode, requestedName: string | undefined): PreparedOperation | null {
    const operation = getOperationAST(document, requestedName);
    if (!operation || operation.operation === OperationTypeNode.SUBSCRIPTION) return null;
    const cacheControl = staticCacheControl(this.schema, document, operation);
    if (cacheControl === null) return null;
    const type = operation.operation;
    return {
      document,
      operationName: operation.name?.value ?? null,
      type,
      compilable: compilesAlike(this.schema, document, operation),
      arrayForObject: arraysForObjects(this.schema, operation),
      cacheControl,
      itemList: itemListPlan(this.schema, operation),
      runs: 0,
    };
  }
}

/**
 * Whether graphql-jit runs the operation as graphql-js does, which it does not in three cases
 * (test/http/preparedOperations.test.ts has each):
 * - a mutation of more than one root field: when one whose type is non-null fails, graphql-js
 *   runs none of those after it (its answer is null as a whole), graphql-jit runs them all;
 * - a variable whose type reaches a @oneOf input object: graphql-jit takes one with two fields
 *   set, which graphql-js refuses;
 * - a non-null variable or input field with a default: graphql-jit refuses it left out, which
 *   graphql-js takes (the default). Apollo would answer each such request; kept off the compiled
 *   path, they are answered here.
 * Otherwise their coercion of variables takes and refuses the same values, and gives the same ones,
 * but for one case checked on each request (arraysForObjects; the gateway's schema, generated
 * variables: test/graphql/variableCoercion.test.ts).
 */
function compilesAlike(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): boolean {
  if (operation.operation === OperationTypeNode.MUTATION && rootFieldCount(document, operation.selectionSet) > 1) return false;
  const seen = new Set<GraphQLInputType>();
  const coercesAlike = (type: GraphQLInputType): boolean => {
    if (isNonNullType(type) || isListType(type)) return coercesAlike(type.ofType);
    if (!isInputObjectType(type) || seen.has(type)) return true;
    seen.add(type);
    if (type.isOneOf) return false;
    return Object.values(type.getFields()).every((field) => !(isNonNullType(field.type) && field.defaultValue !== undefined) && coercesAlike(field.type));
  };
  for (const definition of operation.variableDefinitions ?? []) {
    const type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
    if (type === undefined || (isNonNullType(type) && definition.defaultValue !== undefined) || !coercesAlike(type)) return false;
  }
  return true;
}

/**
 * graphql-jit takes an empty array for an input object none of whose fields is required (it asks
 * `typeof value === 'object'`), where graphql-js refuses one ("to be an object"): createApiKey's
 * input, upsertItems' bestMarketplacePrice. For an operation whose variables can hold such an
 * object, a check of the places they would (and only those): true when one holds an array, and
 * the request then runs on graphql-js, which refuses it as Apollo does. Null when no variable can
 * (recordEvents'), so a batch of events is never walked for it.
 */
function arraysForObjects(schema: GraphQLSchema, operation: OperationDefinitionNode): ((variables: Record<string, unknown> | undefined) => boolean) | null {
  const reaches = new Map<GraphQLInputType, boolean>();
  const canHold = (type: GraphQLInputType): boolean => {
    if (isNonNullType(type) || isListType(type)) return canHold(type.ofType);
    if (!isInputObjectType(type)) return false;
    let known = reaches.get(type);
    if (known === undefined) {
      reaches.set(type, false); // a type that holds itself adds nothing the first look does not find
      const fields = Object.values(type.getFields());
      known = fields.every((field) => !isNonNullType(field.type)) || fields.some((field) => canHold(field.type));
      reaches.set(type, known);
    }
    return known;
  };
  const holdsArray = (type: GraphQLInputType, value: unknown): boolean => {
    if (value === null || typeof value !== 'object') return false;
    if (isNonNullType(type)) return holdsArray(type.ofType, value);
    if (isListType(type)) return Array.isArray(value) ? value.some((item) => holdsArray(type.ofType, item)) : holdsArray(type.ofType, value);
    if (!isInputObjectType(type)) return false;
    if (Array.isArray(value)) return true;
    for (const field of Object.values(type.getFields())) {
      if (canHold(field.type) && Object.hasOwn(value, field.name) && holdsArray(field.type, (value as Record<string, unknown>)[field.name])) return true;
    }
    return false;
  };
  const checked: [string, GraphQLInputType][] = [];
  for (const definition of operation.variableDefinitions ?? []) {
    const type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
    if (type !== undefined && canHold(type)) checked.push([definition.variable.name.value, type]);
  }
  if (checked.length === 0) return null;
  return (variables) => variables !== undefined && checked.some(([name, type]) => holdsArray(type, variables[name]));
}

/** The response keys at the root of an operation (its fragments have no @skip or @include: staticCacheControl). */
function rootFieldCount(document: DocumentNode, selectionSet: SelectionSetNode): number {
  const fragments = fragmentsOf(document);
  const keys = new Set<string>();
  const visit = (set: SelectionSetNode, spread: Set<string>): void => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) keys.add(selection.alias?.value ?? selection.name.value);
      else if (selection.kind === Kind.INLINE_FRAGMENT) visit(selection.selectionSet, spread);
      else if (!spread.has(selection.name.value)) {
        spread.add(selection.name.value);
        const fragment = fragments.get(selection.name.value);
        if (fragment) visit(fragment.selectionSet, spread);
      }
    }
  };
  visit(selectionSet, new Set());
  return keys.size;
}

/** Apollo's NoIntrospection rule (not exported by @apollo/server), for a gateway with introspection off. */
function NoIntrospection(context: ValidationContext): ASTVisitor {
  return {
    Field(node) {
      if (node.name.value === '__schema' || node.name.value === '__type') {
        context.reportError(
          new GraphQLError(
            'GraphQL introspection is not allowed by Apollo Server, but the query contained __schema or __type. To enable introspection, pass introspection: true to ApolloServer in production',
            { nodes: [node], extensions: { validationErrorCode: 'INTROSPECTION_DISABLED' } },
          ),
        );
      }
    },
  };
}

/**
 * The Cache-Control header Apollo's cache-control plugin (defaultMaxAge 0) gives an answer
 * without errors to this operation (no-store for a mutation whose fields have no hint), when it does not depend on which fields resolve; null when it
 * might (a hint below the root that is lower or PRIVATE, @skip/@include, an abstract type, an
 * introspection field).
 */
export function staticCacheControl(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): string | null {
  const fragments = fragmentsOf(document);
  // Apollo's plugin hints a mutation's root fields as a query's (defaultMaxAge for those without one)
  const root = schema.getRootType(operation.operation);
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
