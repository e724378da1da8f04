import {
  getNamedType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  OperationTypeNode,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import type { ItemModel } from '../ports/backend.js';

/**
 * The answer of an operation that is one list of catalogue records, each with a fixed selection
 * of its scalar fields (the recommendations query that most clients send): serialised from each
 * record's text, kept per record, rather than by JSON.stringify of the whole result.
 *
 * Why: JSON.stringify of a 10-item answer was about a tenth of an uncached lookup's CPU (perf, the
 * twenty-third pass in BENCHMARKS.md); a record's part of the answer depends only on the record
 * when its fields are leaves without arguments, directives or resolvers of their own, and
 * records are values (the catalogue replaces a changed one, never edits it), so the text made
 * the first time a record is answered is right for as long as that record object lives (a
 * WeakMap: it goes with the record).
 *
 * Exact by construction: a record's text is JSON.stringify of the element the executor made from
 * it, the first time; the envelope is what JSON.stringify gives `{ data: { key: list } }`. An
 * answer with errors, with extensions, or whose list is not the one the resolver returned (its
 * length differs) is serialised whole as before.
 */
export class ItemListPlan {
  /** `{"data":{"<key>":[` */
  private readonly prefix: string;
  private fragments = new WeakMap<ItemModel, string>();
  /** Characters of the texts this plan has kept since its map was made (those of records gone since included). */
  private readonly kept = { chars: 0 };

  constructor(
    readonly key: string,
    private readonly budget: FragmentBudget = SHARED_BUDGET,
  ) {
    this.prefix = `{"data":{${JSON.stringify(key)}:[`;
    budget.watch(this, this.kept);
  }

  /** Characters of record texts this plan holds at most (an upper bound: a text of a record since dropped still counts). */
  get keptChars(): number {
    return this.kept.chars;
  }

  /**
   * The answer's text for `data`, whose list at `key` was completed from `items`; null when it
   * is not such an answer (the caller serialises it whole).
   */
  serialise(data: Record<string, unknown>, items: readonly (ItemModel | null)[]): string | null {
    const list = data[this.key];
    if (!Array.isArray(list) || list.length !== items.length) return null;
    let text = this.prefix;
    for (let i = 0; i < list.length; i++) {
      if (i > 0) text += ',';
      const item = items[i];
      if (item === null || typeof item !== 'object') {
        text += JSON.stringify(list[i]);
        continue;
      }
      let fragment = this.fragments.get(item);
      if (fragment === undefined) {
        fragment = JSON.stringify(list[i]);
        this.keep(item, fragment);
      }
      text += fragment;
    }
    return `${text}]}}\n`;
  }

  /** Keeps a record's text within the plan's share and the budget of all plans; used once and not kept past them. */
  private keep(item: ItemModel, fragment: string): void {
    if (this.kept.chars + fragment.length > this.budget.planChars) {
      // the records answered from here on are kept again, those answered no more go
      this.budget.release(this.kept.chars);
      this.kept.chars = 0;
      this.fragments = new WeakMap();
    }
    if (!this.budget.take(fragment.length)) return;
    this.kept.chars += fragment.length;
    this.fragments.set(item, fragment);
  }
}

/**
 * What the plans' texts may hold, in characters: each plan's share, and all plans' together (a
 * plan is dropped with its operation; what it held is given back when it is collected). Bounds
 * what many distinct operations over a large catalogue could make the gateway keep.
 */
export class FragmentBudget {
  private chars = 0;
  private readonly collected = new FinalizationRegistry<{ chars: number }>((kept) => this.release(kept.chars));

  constructor(
    readonly planChars: number,
    readonly allChars: number,
  ) {}

  /** Characters kept by all plans now (an upper bound, as each plan's). */
  get heldChars(): number {
    return this.chars;
  }

  watch(plan: object, kept: { chars: number }): void {
    this.collected.register(plan, kept);
  }

  take(chars: number): boolean {
    if (this.chars + chars > this.allChars) return false;
    this.chars += chars;
    return true;
  }

  release(chars: number): void {
    this.chars -= chars;
  }
}

/**
 * 2 Mi characters a plan (the demo shop's 10,843 records at about 150 each for the benchmark's
 * selection), 32 Mi for all of them: what they hold stays within about 64 MB of strings.
 */
const SHARED_BUDGET = new FragmentBudget(2 * 1024 * 1024, 32 * 1024 * 1024);

/** The Item type's name in the schema (schema/*.graphql). */
const ITEM_TYPE = 'Item';

/**
 * The plan for an operation that is one root field of a list of Items whose selection is only
 * scalar or enum fields without arguments, directives or resolvers (and __typename); null for
 * any other. Aliases are fine: they are fixed by the document.
 */
export function itemListPlan(schema: GraphQLSchema, operation: OperationDefinitionNode): ItemListPlan | null {
  if (operation.operation !== OperationTypeNode.QUERY) return null;
  const [root, ...more] = operation.selectionSet.selections;
  if (root === undefined || more.length > 0 || root.kind !== Kind.FIELD || root.directives?.length || !root.selectionSet) return null;
  const field = schema.getQueryType()?.getFields()[root.name.value];
  const item = field === undefined ? null : listedItems(field.type);
  if (item === null) return null;
  const fields = item.getFields();
  for (const selection of root.selectionSet.selections) {
    if (selection.kind !== Kind.FIELD || selection.directives?.length || selection.arguments?.length || selection.selectionSet) return null;
    const name = selection.name.value;
    if (name === '__typename') continue;
    const leaf = fields[name];
    if (leaf === undefined || leaf.args.length > 0 || leaf.resolve !== undefined || !isLeafType(getNamedType(leaf.type))) return null;
  }
  return new ItemListPlan(root.alias?.value ?? root.name.value);
}

/** The Item type of [Item], [Item!], [Item]! or [Item!]!; null for any other type. */
function listedItems(type: GraphQLOutputType): GraphQLObjectType | null {
  const list = isNonNullType(type) ? type.ofType : type;
  if (!isListType(list)) return null;
  const element = isNonNullType(list.ofType) ? list.ofType.ofType : list.ofType;
  return isObjectType(element) && element.name === ITEM_TYPE ? element : null;
}
