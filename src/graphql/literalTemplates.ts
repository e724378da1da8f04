import {
  getNamedType,
  getNullableType,
  isListType,
  isNonNullType,
  isScalarType,
  Kind,
  Lexer,
  Source,
  TokenKind,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type ArgumentNode,
  type DocumentNode,
  type GraphQLInputType,
  type GraphQLScalarType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type TypeNode,
  type ValueNode,
  type VariableDefinitionNode,
} from 'graphql';
import { sizeArgumentOf } from './limits.js';

/**
 * Inline literals as variables, so that `item(itemId: 31000123)` and `item(itemId: 31000124)`
 * share one parsed, validated (and, once it comes back, compiled) document, as Apollo's operation
 * signatures group them. A text's signature is its token stream with every scalar literal
 * replaced by a mark of its kind; the template of a signature is the document of its first text
 * with each literal that can be a variable turned into one, typed as its argument.
 *
 * When a text takes its signature's template, its answer is the one its own document gives:
 * - Validation. The template was validated with every rule; a literal in it is either a
 *   variable of exactly its argument's type, or kept (and then every text of the template must
 *   have that very literal there). The rules that read literal values are ValuesOfCorrectType
 *   (each literal of a text is checked here with its scalar's parseLiteral, as that rule does:
 *   one it refuses sends the text through the whole path, to its usual error), the query
 *   limits' cost (which reads a list field's size argument: such literals are kept, and a list's
 *   length is part of the signature) and OverlappingFieldsCanBeMerged (which compares arguments:
 *   every literal is a variable of its own, so a template where two merged fields compare
 *   literals fails validation and is never used; a text whose own document fails keeps its
 *   signature's texts off templates only until the entry goes).
 * - Execution. A hoisted literal's variable gets the literal's JSON value, used only when the
 *   scalar's parseValue of it gives exactly what parseLiteral gives the literal: the resolvers see
 *   the same arguments.
 * - Errors. An error's locations are positions in the text; the template's are its first text's.
 *   An answer with errors is thrown away and the text is run on its own document (queries only:
 *   running one again reads again). Cache-control does not depend on argument values.
 *
 * Only single-operation documents are templated (a fragment's variable must then be declared in
 * that one operation), only field arguments (directive arguments are kept), only scalars and
 * lists of scalars (input objects and enums are kept).
 */

/** Prefix of the variables literals become; a document that names one of its own is not templated. */
const PREFIX = '_lit';

/** One scalar literal of a text, as the lexer read it. */
export interface Literal {
  kind: Kind.INT | Kind.FLOAT | Kind.STRING;
  block: boolean;
  /** The literal's value: digits, or the decoded string. */
  value: string;
  start: number;
}

/** A text's signature (null when it does not lex, or has more tokens than the parser allows) and its literals. */
export interface Signature {
  key: string;
  literals: Literal[];
}

/** Each literal of the signature, in order: a variable (name, scalar, its type), or one to keep as it is. */
type Slot = { variable: string; scalar: GraphQLScalarType } | { keep: Literal };

/** A document made from a text with its literals as variables, and what each literal of the signature became. */
export interface LiteralTemplate {
  document: DocumentNode;
  slots: Slot[];
}

const literalKind = (kind: TokenKind): Literal['kind'] | null =>
  kind === TokenKind.INT ? Kind.INT : kind === TokenKind.FLOAT ? Kind.FLOAT : kind === TokenKind.STRING || kind === TokenKind.BLOCK_STRING ? Kind.STRING : null;

/**
 * The signature of a query text: its tokens, each literal replaced by a mark of its kind; null
 * when the text has no literal (nothing to share), does not lex, or has more than maxTokens tokens.
 */
export function signatureOf(query: string, maxTokens: number): Signature | null {
  const lexer = new Lexer(new Source(query));
  const literals: Literal[] = [];
  let key = '';
  try {
    for (let count = 0; ; count++) {
      const token = lexer.advance();
      if (token.kind === TokenKind.EOF) break;
      if (count >= maxTokens) return null;
      const kind = literalKind(token.kind);
      if (kind === null) {
        // names, and punctuators (whose value is undefined): a space keeps `a b` apart from `ab`
        key += token.value === undefined ? token.kind : ` ${token.value} `;
      } else {
        const block = token.kind === TokenKind.BLOCK_STRING;
        literals.push({ kind, block, value: token.value, start: token.start });
        key += block ? '\u0001B' : `\u0001${kind[0]}`;
      }
    }
  } catch {
    return null;
  }
  return literals.length === 0 ? null : { key, literals };
}

/** The literal as the parser would give it to parseLiteral. */
const valueNode = (literal: Literal): ValueNode =>
  literal.kind === Kind.STRING ? { kind: Kind.STRING, value: literal.value, block: literal.block } : { kind: literal.kind, value: literal.value };

/** The literal's JSON value, as a client would send it as a variable. */
const jsonValue = (literal: Literal): unknown => (literal.kind === Kind.STRING ? literal.value : Number(literal.value));

/**
 * The variables for a text of this template (its literals in signature order), or null when a
 * literal must keep the text off the template: one kept that differs, or one its scalar refuses
 * or would read differently as a variable.
 */
export function variablesFor(template: LiteralTemplate, literals: readonly Literal[]): Record<string, unknown> | null {
  const variables: Record<string, unknown> = {};
  for (let i = 0; i < template.slots.length; i++) {
    const slot = template.slots[i]!;
    const literal = literals[i]!;
    if ('keep' in slot) {
      if (slot.keep.kind !== literal.kind || slot.keep.block !== literal.block || slot.keep.value !== literal.value) return null;
      continue;
    }
    const json = jsonValue(literal);
    try {
      // as ValuesOfCorrectType: a throw or undefined is a refusal
      const asLiteral: unknown = slot.scalar.parseLiteral(valueNode(literal), undefined);
      if (asLiteral === undefined || !Object.is(asLiteral, slot.scalar.parseValue(json))) return null;
    } catch {
      return null;
    }
    variables[slot.variable] = json;
  }
  return variables;
}

/** A TypeNode for an input type (graphql-js has typeFromAST only the other way). */
function typeNode(type: GraphQLInputType): TypeNode {
  if (isNonNullType(type)) return { kind: Kind.NON_NULL_TYPE, type: typeNode(type.ofType) as Exclude<TypeNode, { kind: Kind.NON_NULL_TYPE }> };
  if (isListType(type)) return { kind: Kind.LIST_TYPE, type: typeNode(type.ofType) };
  return { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: getNamedType(type).name } };
}

/**
 * The template of a valid document (the text's own, just validated) with the text's signature;
 * null when it has nothing to gain (no literal becomes a variable) or cannot be templated.
 * The result must be validated before use.
 */
export function makeTemplate(schema: GraphQLSchema, document: DocumentNode, signature: Signature): LiteralTemplate | null {
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (operations.length !== 1) return null;
  const operation = operations[0]!;
  if (operation.variableDefinitions?.some((v) => v.variable.name.value.startsWith(PREFIX))) return null;
  const byStart = new Map<number, number>();
  signature.literals.forEach((literal, index) => byStart.set(literal.start, index));
  const slots: Slot[] = signature.literals.map((keep) => ({ keep }));
  const definitions: VariableDefinitionNode[] = [];
  /** Value node (by its start) -> the variable it becomes. */
  const replaced = new Map<number, string>();

  const hoist = (node: ValueNode, type: GraphQLInputType): void => {
    if (node.kind !== Kind.INT && node.kind !== Kind.FLOAT && node.kind !== Kind.STRING) return;
    const index = node.loc === undefined ? undefined : byStart.get(node.loc.start);
    const scalar = getNullableType(type);
    if (index === undefined || !isScalarType(scalar)) return;
    const variable = `${PREFIX}${definitions.length}`;
    slots[index] = { variable, scalar };
    replaced.set(node.loc!.start, variable);
    definitions.push({ kind: Kind.VARIABLE_DEFINITION, variable: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: variable } }, type: typeNode(type) });
  };

  const typeInfo = new TypeInfo(schema);
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Argument(node: ArgumentNode) {
        const field = typeInfo.getFieldDef();
        const type = typeInfo.getInputType();
        // directive arguments stay literals
        if (!field || !type || typeInfo.getDirective()) return;
        if (node.value.kind === Kind.LIST) {
          // the cost counts a list's length, which is part of the signature
          const list = getNullableType(type);
          if (!isListType(list)) return;
          for (const item of node.value.values) hoist(item, list.ofType);
        } else if (sizeArgumentOf(field.name) !== node.name.value) {
          // the cost reads a list field's size literal (`first: 3`): that one stays
          hoist(node.value, type);
        }
      },
    }),
  );
  if (definitions.length === 0) return null;

  const variable = (name: string): ValueNode => ({ kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: name } });
  const templated = visit(document, {
    OperationDefinition(node) {
      return { ...node, variableDefinitions: [...(node.variableDefinitions ?? []), ...definitions] };
    },
    IntValue: (node) => (node.loc && replaced.has(node.loc.start) ? variable(replaced.get(node.loc.start)!) : undefined),
    FloatValue: (node) => (node.loc && replaced.has(node.loc.start) ? variable(replaced.get(node.loc.start)!) : undefined),
    StringValue: (node) => (node.loc && replaced.has(node.loc.start) ? variable(replaced.get(node.loc.start)!) : undefined),
  });
  return { document: templated, slots };
}
