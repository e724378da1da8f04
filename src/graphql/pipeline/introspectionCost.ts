import {
  getNamedType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type SelectionSetNode,
} from 'graphql';

/** Fields the operation's introspection answers, counted on the schema's own resolvers and stopping
 * past `limit`: introspection lists hold what the schema holds, which the document does not show. */
export function introspectionCost(
  schema: GraphQLSchema,
  selectionSet: SelectionSetNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  limit: number,
): number {
  let count = 0;
  const info = { schema };
  // a fragment spread within itself counts as empty (NoFragmentCycles refuses it later)
  const path = new Set<string>();

  const walk = (value: unknown, parent: GraphQLNamedType, set: SelectionSetNode): void => {
    for (const selection of set.selections) {
      if (count > limit) return;
      if (selection.kind === Kind.FIELD) {
        answer(value, parent, selection);
        continue;
      }
      const fragment = selection.kind === Kind.INLINE_FRAGMENT ? selection : fragments.get(selection.name.value);
      const condition = fragment?.typeCondition?.name.value;
      if (fragment === undefined || (condition !== undefined && condition !== parent.name)) continue;
      if (selection.kind === Kind.FRAGMENT_SPREAD) {
        if (path.has(selection.name.value)) continue;
        path.add(selection.name.value);
        walk(value, parent, fragment.selectionSet);
        path.delete(selection.name.value);
      } else {
        walk(value, parent, fragment.selectionSet);
      }
    }
  };

  const answer = (value: unknown, parent: GraphQLNamedType, node: FieldNode): void => {
    count += 1;
    const name = node.name.value;
    if (name === '__typename' || !isObjectType(parent)) return;
    const field = parent.getFields()[name];
    if (field === undefined || node.selectionSet === undefined) return;
    const result: unknown = field.resolve?.(value, argumentsOf(field, node), null, info as never);
    if (result === null || result === undefined) return;
    const type = getNamedType(field.type);
    const nullable = isNonNullType(field.type) ? field.type.ofType : field.type;
    if (!isListType(nullable) || !Array.isArray(result)) return walk(result, type, node.selectionSet);
    for (const element of result) {
      if (count > limit) return;
      walk(element, type, node.selectionSet);
    }
  };

  const root = schema.getQueryType();
  if (root === null || root === undefined) return 0;
  const visited = new Set<string>();
  const rootWalk = (set: SelectionSetNode): void => {
    for (const selection of set.selections) {
      if (count > limit) return;
      if (selection.kind === Kind.FIELD) {
        const name = selection.name.value;
        if (name === '__schema') answerRoot(schema, SCHEMA_PARENT, selection);
        else if (name === '__type') {
          // a type named by a variable may be any: counted as every type at once
          const named = typeName(selection);
          const types = named === undefined ? Object.values(schema.getTypeMap()) : [schema.getType(named)];
          for (const type of types) if (type !== undefined && type !== null && count <= limit) answerRoot(type, TYPE_PARENT, selection);
        }
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        rootWalk(selection.selectionSet);
      } else if (!visited.has(selection.name.value)) {
        // spreads of one fragment in the root set land the same fields, answered once
        visited.add(selection.name.value);
        const fragment = fragments.get(selection.name.value);
        if (fragment !== undefined) rootWalk(fragment.selectionSet);
      }
    }
  };
  const answerRoot = (value: unknown, parent: GraphQLNamedType, node: FieldNode): void => {
    count += 1;
    if (node.selectionSet !== undefined) walk(value, parent, node.selectionSet);
  };
  rootWalk(selectionSet);
  return Math.min(count, limit + 1);
}

const SCHEMA_PARENT = getNamedType(SchemaMetaFieldDef.type);
const TYPE_PARENT = getNamedType(TypeMetaFieldDef.type);

function typeName(node: FieldNode): string | undefined {
  const value = node.arguments?.find((argument) => argument.name.value === 'name')?.value;
  return value?.kind === Kind.STRING ? value.value : undefined;
}

/** Arguments of an introspection field: a variable counts as true, the larger answer. */
function argumentsOf(field: GraphQLField<unknown, unknown>, node: FieldNode): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const argument of field.args) {
    const given = node.arguments?.find((a) => a.name.value === argument.name)?.value;
    if (given === undefined) values[argument.name] = argument.defaultValue;
    else if (given.kind === Kind.BOOLEAN) values[argument.name] = given.value;
    else values[argument.name] = true;
  }
  return values;
}
