/**
 * `aliases` aliases of `__type(name: "Query")` through fragments that reach every field's type's
 * fields (issue 41, finding 1): 30 of them, a 1.3 KB anonymous body, answered 2.3 MB before
 * MAX_TYPE_FIELDS and MAX_INTROSPECTION_COST.
 */
export const typeAliasesQuery = (aliases: number): string =>
  [
    `{ ${Array.from({ length: aliases }, (_, i) => `a${i}: __type(name: "Query") { ...T }`).join(' ')} }`,
    'fragment T on __Type { fields(includeDeprecated: true) { name description args { ...V } type { ...R } } }',
    'fragment V on __InputValue { name description type { ...R } }',
    'fragment R on __Type { name fields { ...F } ofType { name fields { ...F } ofType { name fields { ...F } ofType { name fields { ...F } } } } }',
    'fragment F on __Field { name description deprecationReason args { name description } type { kind name description ofType { kind name description ofType { name } } } }',
  ].join('\n');
