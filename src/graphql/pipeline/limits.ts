import {
  GraphQLError,
  Kind,
  OperationTypeNode,
  type ASTNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import { DEFAULT_LIMITS, INTROSPECTION_MAX_DEPTH } from '../../config/defaults.js';
import { introspectionCost } from './introspectionCost.js';
import { MAX_EVENTS_PER_CALL, MAX_ITEMS_PER_CALL } from '../../model/ingest.js';
import { FILTERED_LIST_COST, MAX_ITEM_IDS, MAX_RECOMMENDATIONS, type QueryLimits } from '../../config/limits.js';
import { MAX_LIST_ITEMS } from '../../model/itemLists.js';

/** How many times a field's selection runs when its size argument is a variable or left out. */
const LIST_SIZE: Record<string, { argument: string; max: number }> = {
  postBrowsedProducts: { argument: 'first', max: MAX_RECOMMENDATIONS },
  productRecommendations: { argument: 'first', max: MAX_RECOMMENDATIONS },
  recommendations: { argument: 'first', max: MAX_RECOMMENDATIONS },
  trendingItems: { argument: 'first', max: MAX_LIST_ITEMS },
  popularItems: { argument: 'first', max: MAX_LIST_ITEMS },
  recommendedForYou: { argument: 'first', max: MAX_LIST_ITEMS },
  items: { argument: 'itemIds', max: MAX_ITEM_IDS },
  // a router sends entity representations as a variable, which validation cannot count: it
  // costs one here, and _entities checks the real count against MAX_COST when it runs
  _entities: { argument: 'representations', max: 1 },
  apiKeys: { argument: '', max: 100 },
  variantItems: { argument: '', max: 20 },
  edges: { argument: '', max: MAX_RECOMMENDATIONS },
  nodes: { argument: '', max: MAX_RECOMMENDATIONS },
  attributes: { argument: '', max: 20 },
  imageEntities: { argument: '', max: 10 },
};

/** Lists that take a `filter`: one given (a variable included, as its value is unknown here) costs its first walk. */
const FILTERED_LISTS = new Set(['postBrowsedProducts', 'productRecommendations', 'recommendations', 'recommendedForYou']);

const filterCost = (field: FieldNode): number => {
  if (!FILTERED_LISTS.has(field.name.value)) return 0;
  const filter = field.arguments?.find((a) => a.name.value === 'filter');
  return filter === undefined || filter.value.kind === Kind.NULL ? 0 : FILTERED_LIST_COST;
};

export const sizeArgumentOf = (fieldName: string): string | undefined => LIST_SIZE[fieldName]?.argument || undefined;

function multiplier(field: FieldNode): number {
  const rule = LIST_SIZE[field.name.value];
  if (!rule) return 1;
  const arg = field.arguments?.find((a) => a.name.value === rule.argument);
  if (arg?.value.kind === Kind.INT) return Math.max(0, Math.min(Number(arg.value.value), rule.max));
  if (arg?.value.kind === Kind.LIST) return Math.min(arg.value.values.length, rule.max);
  return rule.max;
}

export const limitError = (limit: string, max: number, actual: number, node?: ASTNode): GraphQLError =>
  new GraphQLError(LIMIT_MESSAGES[limit]?.(max) ?? `Query too complex: ${limit} ${actual} exceeds the limit of ${max}`, {
    nodes: node,
    extensions: { limit, max, actual },
  });

const LIMIT_MESSAGES: Readonly<Record<string, (max: number) => string>> = {
  // counting stops past the limit: the count shown is the limit plus one
  introspectionCost: (max) =>
    `Query too complex: its introspection (__schema, __type) answers more than ${max} fields, the limit (MAX_INTROSPECTION_COST): ask for fewer fields, or fewer types, a request`,
};

/** `__schema` fields an operation may hold: one answers the standard introspection query. */
const MAX_SCHEMA_FIELDS = 1;

/** Below these fields depth is measured against INTROSPECTION_MAX_DEPTH. */
const isIntrospection = (name: string): boolean => name === '__schema' || name === '__type';

interface Measure {
  /** Levels of fields below the selection set, an introspection field's own selection left out. */
  depth: number;
  /** The deepest introspection field's levels, counted from that field. */
  introspectionDepth: number;
  schemaFields: number;
  typeFields: number;
  cost: number;
  aliases: number;
  /** The longest alias: it is written into the answer once per value. */
  aliasLength: number;
  directives: number;
  sameName: number;
  landing: Map<string, number>;
}

export function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  return fragments;
}

/** The measures of every operation, linear in the document: a fragment is measured once however
 * often spread (doubling spreads would be exponential), and a cycle counts as empty. */
export function measureOperations(document: DocumentNode): { operation: OperationDefinitionNode; measure: Measure }[] {
  const fragments = fragmentsOf(document);
  const measured = new Map<string, Measure>();
  const inProgress = new Set<string>();

  const fragmentMeasure = (name: string): Measure | null => {
    const known = measured.get(name);
    if (known) return known;
    const fragment = fragments.get(name);
    if (!fragment || inProgress.has(name)) return null;
    inProgress.add(name);
    const measure = measureSet(fragment.selectionSet);
    inProgress.delete(name);
    measure.directives += fragment.directives?.length ?? 0;
    measured.set(name, measure);
    return measure;
  };

  const measureSet = (set: SelectionSetNode | undefined): Measure => {
    const total: Measure = { depth: 0, introspectionDepth: 0, schemaFields: 0, typeFields: 0, cost: 0, aliases: 0, aliasLength: 0, directives: 0, sameName: 0, landing: new Map() };
    if (!set) return total;
    const land = (from: Map<string, number>) => {
      for (const [name, count] of from) total.landing.set(name, (total.landing.get(name) ?? 0) + count);
    };
    // graphql-js compares the fields of a fragment spread twice in one set once
    const spread = new Set<string>();
    for (const selection of set.selections) {
      total.directives += selection.directives?.length ?? 0;
      let inner: Measure;
      if (selection.kind === Kind.FIELD) {
        if (selection.alias) {
          total.aliases += 1;
          total.aliasLength = Math.max(total.aliasLength, selection.alias.value.length);
        }
        const responseName = selection.alias?.value ?? selection.name.value;
        total.landing.set(responseName, (total.landing.get(responseName) ?? 0) + 1);
        inner = measureSet(selection.selectionSet);
        if (isIntrospection(selection.name.value)) {
          if (selection.name.value === '__schema') total.schemaFields += 1;
          else total.typeFields += 1;
          total.depth = Math.max(total.depth, 1);
          total.introspectionDepth = Math.max(total.introspectionDepth, 1 + inner.depth);
        } else {
          total.depth = Math.max(total.depth, 1 + inner.depth);
        }
        total.cost += 1 + multiplier(selection) * inner.cost + filterCost(selection);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        inner = measureSet(selection.selectionSet);
        total.depth = Math.max(total.depth, inner.depth);
        total.cost += inner.cost;
        land(inner.landing);
      } else {
        const fragment = fragmentMeasure(selection.name.value);
        if (!fragment) continue;
        inner = fragment;
        total.depth = Math.max(total.depth, inner.depth);
        total.cost += inner.cost;
        if (!spread.has(selection.name.value)) land(inner.landing);
        spread.add(selection.name.value);
      }
      total.introspectionDepth = Math.max(total.introspectionDepth, inner.introspectionDepth);
      total.schemaFields += inner.schemaFields;
      total.typeFields += inner.typeFields;
      total.aliases += inner.aliases;
      total.aliasLength = Math.max(total.aliasLength, inner.aliasLength);
      total.directives += inner.directives;
      total.sameName = Math.max(total.sameName, inner.sameName);
    }
    for (const count of total.landing.values()) total.sameName = Math.max(total.sameName, count);
    return total;
  };

  const operations: { operation: OperationDefinitionNode; measure: Measure }[] = [];
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    const measure = measureSet(definition.selectionSet);
    measure.directives += definition.directives?.length ?? 0;
    operations.push({ operation: definition, measure });
  }
  return operations;
}

/** Mutations whose one call is capped may appear once an operation: aliases sharing one variable
 * would otherwise bypass the per-call cap and the all-or-nothing rule. */
const ONCE_PER_OPERATION: Readonly<Record<string, string>> = {
  recordEvents: `${MAX_EVENTS_PER_CALL} events`,
  upsertItems: `${MAX_ITEMS_PER_CALL} item records`,
};

/** Response names of each capped field in the root set, fragments followed; @skip and @include count all the same. */
function onceFieldsOf(operation: OperationDefinitionNode, fragments: Map<string, FragmentDefinitionNode>): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  const visited = new Set<string>();
  const walk = (set: SelectionSetNode): void => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        const name = selection.name.value;
        if (ONCE_PER_OPERATION[name] === undefined) continue;
        const names = found.get(name) ?? new Set<string>();
        names.add(selection.alias?.value ?? name);
        found.set(name, names);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        walk(selection.selectionSet);
      } else if (!visited.has(selection.name.value)) {
        visited.add(selection.name.value);
        const fragment = fragments.get(selection.name.value);
        if (fragment) walk(fragment.selectionSet);
      }
    }
  };
  walk(operation.selectionSet);
  return found;
}

/** The limit errors of a document; with the schema, introspection's answer is counted too. */
export function limitErrors(document: DocumentNode, limits: QueryLimits, schema?: GraphQLSchema): GraphQLError[] {
  const errors: GraphQLError[] = [];
  let fragments: Map<string, FragmentDefinitionNode> | undefined;
  for (const { operation, measure } of measureOperations(document)) {
    // only a mutation can hold them: no field returns Mutation
    if (operation.operation === OperationTypeNode.MUTATION) {
      fragments ??= fragmentsOf(document);
      for (const [field, names] of onceFieldsOf(operation, fragments)) {
        if (names.size <= 1) continue;
        errors.push(
          new GraphQLError(
            `Query too complex: an operation may hold one ${field} field, and this one holds ${names.size} (${[...names].slice(0, 3).map((name) => name.slice(0, 40)).join(', ')}${names.size > 3 ? ', …' : ''}): ` +
              `send at most ${ONCE_PER_OPERATION[field]} in one ${field} a request`,
            { nodes: operation, extensions: { limit: `${field}Fields`, max: 1, actual: names.size } },
          ),
        );
      }
    }
    const maxTypeFields = limits.maxTypeFields ?? DEFAULT_LIMITS.maxTypeFields!;
    const maxIntrospectionCost = limits.maxIntrospectionCost ?? DEFAULT_LIMITS.maxIntrospectionCost!;
    // counted on the schema only where the counts above let it run at all
    const introspects = schema !== undefined && measure.schemaFields + measure.typeFields > 0 && measure.schemaFields <= MAX_SCHEMA_FIELDS && measure.typeFields <= maxTypeFields;
    if (introspects) fragments ??= fragmentsOf(document);
    const checks: [string, number, number][] = [
      ['depth', limits.maxDepth, measure.depth],
      ['introspectionDepth', Math.max(limits.maxDepth, INTROSPECTION_MAX_DEPTH), measure.introspectionDepth],
      ['schemaFields', MAX_SCHEMA_FIELDS, measure.schemaFields],
      ['typeFields', maxTypeFields, measure.typeFields],
      ['introspectionCost', maxIntrospectionCost, introspects ? introspectionCost(schema, operation.selectionSet, fragments!, maxIntrospectionCost) : 0],
      ['aliases', limits.maxAliases, measure.aliases],
      ['aliasLength', limits.maxAliasLength ?? DEFAULT_LIMITS.maxAliasLength!, measure.aliasLength],
      ['directives', limits.maxDirectives, measure.directives],
      ['cost', limits.maxCost, measure.cost],
      ['sameNameFields', limits.maxSameNameFields ?? DEFAULT_LIMITS.maxSameNameFields!, measure.sameName],
    ];
    for (const [limit, max, actual] of checks) {
      if (actual > max) errors.push(limitError(limit, max, actual, operation));
    }
  }
  return errors;
}

let validations = 0;

/** Validations so far: a synchronous stretch validated a document when this grew across it (new-document limit). */
export const validationsSoFar = (): number => validations;

/** Depth, aliases, directives, cost and same-name fields, following fragments. Over a limit, it
 * reports and empties the document's definitions so the other rules, some quadratic in what the
 * limits bound, walk nothing; such a document is never stored or run. */
export function queryLimitsRule(limits: QueryLimits): ValidationRule {
  return (context: ValidationContext) => {
    validations += 1;
    const document = context.getDocument();
    const errors = limitErrors(document, limits, context.getSchema());
    if (errors.length > 0) {
      for (const error of errors) context.reportError(error);
      if (!Object.isFrozen(document)) (document as { definitions: DocumentNode['definitions'] }).definitions = [];
    }
    return {};
  };
}

/** The MAX_TOKENS limit behind a parse error, or null: graphql-js reports it as a syntax error. */
export function tokenLimitOf(message: string): number | null {
  const match = /^Syntax Error: Document contains more tha[nt] (\d+) tokens/.exec(message);
  return match === null ? null : Number(match[1]);
}

/** What one `_entities` entity costs, so the resolver can check the real count against MAX_COST. */
export function entityCost(field: FieldNode, fragments: Readonly<Record<string, FragmentDefinitionNode>>): number {
  const document: DocumentNode = {
    kind: Kind.DOCUMENT,
    definitions: [
      { kind: Kind.OPERATION_DEFINITION, operation: OperationTypeNode.QUERY, selectionSet: field.selectionSet ?? { kind: Kind.SELECTION_SET, selections: [] } },
      ...Object.values(fragments),
    ],
  };
  return measureOperations(document)[0]?.measure.cost ?? 0;
}
