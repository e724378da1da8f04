import type { CodegenConfig } from '@graphql-codegen/cli';

// What a frontend team writes: typed documents for its own operations, from the gateway's schema.
// Run from the repository's root (`npm run codegen`); a team in its own repository would point
// `schema` at its copy of schema/ or at the gateway's /graphql. Introspected there, the schema also
// holds the federation subgraph's scalars, which strictScalars refuses unmapped ("Unknown scalar
// type _Any"): add `_Any: 'unknown', federation__FieldSet: 'string', link__Import: 'string'`.
const config: CodegenConfig = {
  schema: 'schema/*.graphql',
  documents: 'examples/client/operations/*.graphql',
  generates: {
    'examples/client/src/gql/': {
      preset: 'client',
      presetConfig: {
        // a plain function here, not a React hook
        fragmentMasking: { unmaskFunctionName: 'getFragmentData' },
      },
      config: {
        // the operation as a string: fetch sends it as it is, no GraphQL library at run time
        documentMode: 'string',
        useTypeImports: true,
        enumsAsTypes: true,
        strictScalars: true,
        scalars: { ItemId: 'number', DateTime: 'string' },
        // NodeNext: relative imports end in .js
        emitLegacyCommonJSImports: false,
      },
    },
  },
  ignoreNoDocuments: false,
};

export default config;
