import { pathToFileURL } from 'node:url';
import { getFragmentData, type FragmentType } from './gql/index.js';
import { MyApiKeysDocument, ProductCardFragmentDoc, ProductPageDocument, type TypedDocumentString } from './gql/graphql.js';

/**
 * A frontend team's client of the gateway: typed documents generated from the operations in
 * ../operations (npm run codegen), sent with fetch. Nothing here is typed by hand: a schema change
 * that breaks an operation, or a field this code reads that the operation no longer asks for,
 * fails `npm run typecheck`.
 *
 *   GATEWAY_URL=http://localhost:4000 API_KEY=… [ITEM_ID=31000005] npx tsx examples/client/src/productPage.ts
 */

export class GraphQLRequestError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly codes: unknown[],
  ) {
    super(message);
  }
}

/** Runs one typed operation; its result is typed by the document, its variables checked by it. */
export async function execute<TResult, TVariables>(
  endpoint: { url: string; apiKey: string },
  document: TypedDocumentString<TResult, TVariables>,
  // an operation without variables may be called without them
  ...[variables]: TVariables extends Record<string, never> ? [] : [TVariables]
): Promise<TResult> {
  const response = await fetch(new URL('/graphql', endpoint.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', authorization: endpoint.apiKey },
    body: JSON.stringify({ query: document.toString(), variables }),
  });
  const body = (await response.json()) as { data?: TResult | null; errors?: { message: string; extensions?: { code?: unknown } }[] };
  if (body.errors?.length || body.data == null) {
    const messages = body.errors?.map((error) => error.message).join('; ') ?? `HTTP ${response.status}`;
    throw new GraphQLRequestError(messages, response.status, body.errors?.map((error) => error.extensions?.code) ?? []);
  }
  return body.data;
}

/** A card's lines: what a list component renders from the fragment it owns. */
export function cardLine(card: FragmentType<typeof ProductCardFragmentDoc>): string {
  const item = getFragmentData(ProductCardFragmentDoc, card);
  const price = item.salePrice == null ? 'no price' : `$${item.salePrice.toFixed(2)}`;
  const rating = item.customerRating == null ? '' : `, ${item.customerRating.toFixed(1)}★ (${item.numReviews ?? 0})`;
  const stock = item.stock == null || item.stock === 'Available' ? '' : ` [${item.stock}]`;
  return `${item.name ?? `item ${item.itemId}`} (${item.itemId}), ${item.brandName ?? 'no brand'}: ${price}${rating}${stock}`;
}

/** The page's data as text: what the team's components would render. */
export async function productPage(endpoint: { url: string; apiKey: string }, itemId: number): Promise<string> {
  const [{ viewer, apiKeys }, { item }] = await Promise.all([
    execute(endpoint, MyApiKeysDocument),
    execute(endpoint, ProductPageDocument, { itemId }),
  ]);
  const lines = [`signed in as ${viewer?.username ?? '(unknown user)'} by ${viewer?.authenticatedBy ?? 'nothing'}`];
  lines.push(`keys: ${apiKeys.map((key) => `${key.name} (last used ${key.lastUsedAt ?? 'never'})`).join(', ')}`);
  if (item == null) return [...lines, `item ${itemId}: not found`].join('\n');
  lines.push('', `product: ${cardLine(item)}`);
  if (item.shortDescription) lines.push(`  ${item.shortDescription.replace(/<[^>]+>/g, '')}`);
  for (const variant of item.variantItems) {
    lines.push(`  variant ${variant.itemId}: ${[variant.color, variant.size].filter(Boolean).join(' ') || 'as is'}`);
  }
  lines.push('', 'bought with it:');
  for (const { rank, source, node } of item.boughtWith.edges) {
    lines.push(`  ${rank}. ${cardLine(node)} (${source.toLowerCase()})`);
    if (node.variantItems.length > 0) lines.push(`     variants: ${node.variantItems.map((v) => v.itemId).join(', ')}`);
  }
  lines.push('', 'viewed with it:');
  for (const card of item.viewedWith) lines.push(`  - ${cardLine(card)}`);
  return lines.join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const apiKey = process.env.API_KEY;
  if (!apiKey) {
    console.error('Set API_KEY to a key of the gateway (and GATEWAY_URL, default http://localhost:4000).');
    process.exit(2);
  }
  const url = process.env.GATEWAY_URL ?? 'http://localhost:4000';
  const itemId = Number(process.env.ITEM_ID ?? 31000005);
  try {
    console.log(await productPage({ url, apiKey }, itemId));
  } catch (error) {
    console.error(error instanceof GraphQLRequestError ? `${error.message} (HTTP ${error.status}, ${error.codes.join(', ')})` : error);
    process.exit(1);
  }
}
