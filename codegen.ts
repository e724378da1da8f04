import type { CodegenConfig } from '@graphql-codegen/cli';

// Parents are backend models (src/ports/backend.ts), so field resolvers stay one-liners and
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
        contextType: '../graphql/schema/context.js#GatewayContext',
        scalars: {
          ItemId: 'number',
          // an input is ms since 1970 (src/graphql/schema/scalars.ts)
          DateTime: { input: 'number', output: 'Date | string' },
        },
        mappers: {
          Item: '../ports/backend.js#ItemModel',
          ApiKey: '../ports/backend.js#ApiKeyModel',
          Viewer: '../ports/backend.js#PrincipalModel',
          RecommendationConnection: '../ports/backend.js#RecommendationListModel',
          RecommendationEdge: '../ports/backend.js#RecommendationEntryModel',
          ForYouConnection: '../ports/backend.js#ForYouListModel',
          ForYouEdge: '../ports/backend.js#ForYouEntryModel',
          CreateApiKeyPayload: '../ports/backend.js#CreatedApiKeyModel',
          RecordEventsPayload: '../ports/backend.js#RecordEventsResultModel',
          RecommendationStats: '../ports/attribution.js#RecommendationStatsModel',
          UpsertItemsPayload: '../ports/backend.js#UpsertItemsResultModel',
        },
      },
    },
  },
};

export default config;
