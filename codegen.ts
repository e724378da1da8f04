import type { CodegenConfig } from '@graphql-codegen/cli';

// Parents are backend models (src/backends/types.ts), so field resolvers stay one-liners and
// resolvers never see an implementation.
const config: CodegenConfig = {
  schema: 'schema/*.graphql',
  generates: {
    'src/__generated__/resolvers-types.ts': {
      plugins: ['typescript', 'typescript-resolvers'],
      config: {
        useTypeImports: true,
        useIndexSignature: true,
        enumsAsTypes: true,
        strictScalars: true,
        makeResolverTypeCallable: true,
        contextType: '../context.js#GatewayContext',
        scalars: {
          ItemId: 'number',
          DateTime: { input: 'Date', output: 'Date | string' },
        },
        mappers: {
          Item: '../backends/types.js#ItemModel',
          ApiKey: '../backends/types.js#ApiKeyModel',
          Viewer: '../backends/types.js#PrincipalModel',
          RecommendationConnection: '../backends/types.js#RecommendationListModel',
          RecommendationEdge: '../backends/types.js#RecommendationEntryModel',
          CreateApiKeyPayload: '../backends/types.js#CreatedApiKeyModel',
          RecordEventsPayload: '../backends/types.js#RecordEventsResultModel',
          UpsertItemsPayload: '../backends/types.js#UpsertItemsResultModel',
        },
      },
    },
  },
};

export default config;
