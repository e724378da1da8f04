/* eslint-disable */
import * as types from './graphql.js';



/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "query MyApiKeys {\n  viewer {\n    username\n    domain\n    authenticatedBy\n  }\n  apiKeys {\n    id\n    name\n    createdAt\n    expiresAt\n    lastUsedAt\n  }\n}": typeof types.MyApiKeysDocument,
    "query ProductPage($itemId: ItemId!) {\n  item(itemId: $itemId) {\n    ...ProductCard\n    shortDescription\n    variantItems {\n      itemId\n      color\n      size\n      salePrice\n      stock\n    }\n    boughtWith: recommendations(kind: NEXT_BEST_PRODUCT, first: 4) {\n      edges {\n        rank\n        source\n        node {\n          ...ProductCard\n          variantItems {\n            itemId\n            color\n            size\n          }\n        }\n      }\n    }\n    viewedWith: postBrowsedProducts(first: 4) {\n      ...ProductCard\n    }\n  }\n}\n\nfragment ProductCard on Item {\n  itemId\n  name\n  brandName\n  salePrice\n  customerRating\n  numReviews\n  thumbnailImage\n  stock\n}": typeof types.ProductPageDocument,
};
const documents: Documents = {
    "query MyApiKeys {\n  viewer {\n    username\n    domain\n    authenticatedBy\n  }\n  apiKeys {\n    id\n    name\n    createdAt\n    expiresAt\n    lastUsedAt\n  }\n}": types.MyApiKeysDocument,
    "query ProductPage($itemId: ItemId!) {\n  item(itemId: $itemId) {\n    ...ProductCard\n    shortDescription\n    variantItems {\n      itemId\n      color\n      size\n      salePrice\n      stock\n    }\n    boughtWith: recommendations(kind: NEXT_BEST_PRODUCT, first: 4) {\n      edges {\n        rank\n        source\n        node {\n          ...ProductCard\n          variantItems {\n            itemId\n            color\n            size\n          }\n        }\n      }\n    }\n    viewedWith: postBrowsedProducts(first: 4) {\n      ...ProductCard\n    }\n  }\n}\n\nfragment ProductCard on Item {\n  itemId\n  name\n  brandName\n  salePrice\n  customerRating\n  numReviews\n  thumbnailImage\n  stock\n}": types.ProductPageDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query MyApiKeys {\n  viewer {\n    username\n    domain\n    authenticatedBy\n  }\n  apiKeys {\n    id\n    name\n    createdAt\n    expiresAt\n    lastUsedAt\n  }\n}"): typeof import('./graphql.js').MyApiKeysDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query ProductPage($itemId: ItemId!) {\n  item(itemId: $itemId) {\n    ...ProductCard\n    shortDescription\n    variantItems {\n      itemId\n      color\n      size\n      salePrice\n      stock\n    }\n    boughtWith: recommendations(kind: NEXT_BEST_PRODUCT, first: 4) {\n      edges {\n        rank\n        source\n        node {\n          ...ProductCard\n          variantItems {\n            itemId\n            color\n            size\n          }\n        }\n      }\n    }\n    viewedWith: postBrowsedProducts(first: 4) {\n      ...ProductCard\n    }\n  }\n}\n\nfragment ProductCard on Item {\n  itemId\n  name\n  brandName\n  salePrice\n  customerRating\n  numReviews\n  thumbnailImage\n  stock\n}"): typeof import('./graphql.js').ProductPageDocument;


export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}
