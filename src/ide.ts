import { gzipSync } from 'node:zlib';
import { renderGraphiQL } from '@graphql-yoga/render-graphiql';

/** The query the IDE opens with: it must run as it is (a test runs it). */
export const DEFAULT_QUERY = `# recs-gateway: GraphiQL, served by the gateway itself (no CDN, works offline).
#
# Every query but viewer needs an API key: put it in the Headers tab as
#   { "Authorization": "<your key>" }
# (or "Basic <base64 of user:password>" to create your first key with createApiKey).
# 31000005 is a smartphone of the demo shop.

query Recommendations($itemId: ItemId! = 31000005) {
  viewer { username authenticatedBy }
  item(itemId: $itemId) {
    name
    salePrice
    productRecommendations(first: 5) { itemId name salePrice }
    postBrowsedProducts(first: 5) { itemId name stock }
  }
}
`;

export interface IdePage {
  html: string;
  gzip: Buffer;
}

let page: IdePage | undefined;

/** The GraphiQL page (about 9 MB, 2 MB gzipped: its editor is inlined), rendered once. */
export function idePage(): IdePage {
  if (!page) {
    const html = renderGraphiQL({
      title: 'recs-gateway GraphiQL',
      endpoint: '/graphql',
      defaultQuery: DEFAULT_QUERY,
      shouldPersistHeaders: false,
    });
    page = { html, gzip: gzipSync(html) };
  }
  return page;
}
