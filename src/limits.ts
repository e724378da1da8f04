import {
  GraphQLError,
  Kind,
  type ASTNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';

/**
 * Limits on what one operation may ask for, checked once per distinct document (Apollo caches
 * validated documents), before anything runs. Defaults are generous for real clients: the
 * deepest sensible query (item -> recommendations -> edges -> node -> variantItems -> attributes)
 * is depth 6 and costs about 1,300.
 */
export interface QueryLimits {
  /** MAX_DEPTH: nesting of fields; default 10. */
  maxDepth: number;
  /** MAX_ALIASES: aliased fields in one operation; default 30. */
  maxAliases: number;
  /** MAX_DIRECTIVES: directives in one operation; default 20. */
  maxDirectives: number;
  /** MAX_TOKENS: lexical tokens in a document (checked by the parser); default 2000. */
  maxTokens: number;
  /** MAX_COST: fields weighted by how many times they run (a list field costs its `first`); default 5000. */
  maxCost: number;
}

export const DEFAULT_LIMITS: QueryLimits = {
  maxDepth: 10,
  maxAliases: 30,
  maxDirectives: 20,
  maxTokens: 2000,
  maxCost: 5000,
};

/** How many times a field's selection runs when its size argument is a variable or left out. */
const LIST_SIZE: Record<string, { argument: string; max: number }> = {
  postBrowsedProducts: { argument: 'first', max: 10 },
  productRecommendations: { argument: 'first', max: 10 },
  recommendations: { argument: 'first', max: 10 },
  items: { argument: 'itemIds', max: 100 },
  apiKeys: { argument: '', max: 100 },
  variantItems: { argument: '', max: 20 },
  edges: { argument: '', max: 10 },
  nodes: { argument: '', max: 10 },
  attributes: { argument: '', max: 20 },
  imageEntities: { argument: '', max: 10 },
};

function multiplier(field: FieldNode): number {
  const rule = LIST_SIZE[field.name.value];
  if (!rule) return 1;
  const arg = field.arguments?.find((a) => a.name.value === rule.argument);
  if (arg?.value.kind === Kind.INT) return Math.max(0, Math.min(Number(arg.value.value), rule.max));
  if (arg?.value.kind === Kind.LIST) return Math.min(arg.value.values.length, rule.max);
  return rule.max;
}

export const limitError = (limit: string, max: number, actual: number, node?: ASTNode): GraphQLError =>
  new GraphQLError(`Query too complex: ${limit} ${actual} exceeds the limit of ${max}`, {
    nodes: node,
    extensions: { limit, max, actual },
  });

interface Measure {
  depth: number;
  cost: number;
  aliases: number;
  directives: number;
}

/** One validation rule for depth, aliases, directives and cost, following fragments. */
export function queryLimitsRule(limits: QueryLimits): ValidationRule {
  return (context: ValidationContext) => {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const definition of context.getDocument().definitions) {
      if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    }

    const measure = (set: SelectionSetNode | undefined, depth: number, seen: Set<string>): Measure => {
      const total: Measure = { depth, cost: 0, aliases: 0, directives: 0 };
      if (!set) return total;
      for (const selection of set.selections) {
        total.directives += selection.directives?.length ?? 0;
        let inner: Measure;
        if (selection.kind === Kind.FIELD) {
          if (selection.alias) total.aliases += 1;
          inner = measure(selection.selectionSet, depth + 1, seen);
          const times = multiplier(selection);
          total.cost += 1 + times * inner.cost;
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          inner = measure(selection.selectionSet, depth, seen);
          total.cost += inner.cost;
        } else {
          const name = selection.name.value;
          const fragment = fragments.get(name);
          // a cycle is reported by graphql's own NoFragmentCycles rule
          if (!fragment || seen.has(name)) continue;
          inner = measure(fragment.selectionSet, depth, new Set(seen).add(name));
          total.directives += fragment.directives?.length ?? 0;
          total.cost += inner.cost;
        }
        total.depth = Math.max(total.depth, inner.depth);
        total.aliases += inner.aliases;
        total.directives += inner.directives;
      }
      return total;
    };

    return {
      OperationDefinition(operation) {
        const m = measure(operation.selectionSet, 0, new Set());
        m.directives += operation.directives?.length ?? 0;
        const checks: [string, number, number][] = [
          ['depth', limits.maxDepth, m.depth],
          ['aliases', limits.maxAliases, m.aliases],
          ['directives', limits.maxDirectives, m.directives],
          ['cost', limits.maxCost, m.cost],
        ];
        for (const [limit, max, actual] of checks) {
          if (actual > max) context.reportError(limitError(limit, max, actual, operation));
        }
      },
    };
  };
}

/**
 * Whether a parse error is graphql-js refusing a document over MAX_TOKENS (it reports that as a
 * syntax error; the gateway files it with the other limits, under QUERY_TOO_COMPLEX).
 */
export const isTokenLimitError = (message: string): boolean => /^Syntax Error: Document contains more tha[nt] \d+ tokens/.test(message);
