import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, constants as zlibConstants, gzip } from 'node:zlib';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ClientAddresses } from '../../auth/clientAddress.js';
import type { RateLimiter } from '../../auth/rateLimit.js';
import { ErrorCode, GatewayError, httpStatusOf } from '../../errors.js';
import { IDE_ASSET_PREFIX } from '../routeTable.js';
import { errorHeaders, gatewayErrorBody, graphqlError, sendJson } from '../send.js';

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


type Encoding = 'br' | 'gzip' | 'identity';

const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

// not the maximum 11: far more CPU for little gain, and a first visitor waits for it
const BROTLI_QUALITY = 9;

class IdeFile {
  readonly hash: string;
  private readonly encoded = new Map<Encoding, Promise<Buffer>>();

  constructor(
    readonly contentType: string,
    readonly body: Buffer,
    readonly cacheControl: string,
  ) {
    this.hash = createHash('sha256').update(body).digest('base64url').slice(0, 22);
    this.encoded.set('identity', Promise.resolve(body));
  }

  etag(encoding: Encoding): string {
    return encoding === 'identity' ? `"${this.hash}"` : `"${this.hash}-${encoding}"`;
  }

  bytes(encoding: Encoding): Promise<Buffer> {
    let bytes = this.encoded.get(encoding);
    if (bytes === undefined) {
      bytes =
        encoding === 'br'
          ? brotli(this.body, {
              params: {
                [zlibConstants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
                [zlibConstants.BROTLI_PARAM_SIZE_HINT]: this.body.length,
                [zlibConstants.BROTLI_PARAM_MODE]:
                  this.contentType.startsWith('image/') ? zlibConstants.BROTLI_MODE_GENERIC : zlibConstants.BROTLI_MODE_TEXT,
              },
            })
          : gzipped(this.body, { level: 9 });
      // a failure is not kept: the next request tries again
      bytes.catch(() => this.encoded.delete(encoding));
      this.encoded.set(encoding, bytes);
    }
    return bytes;
  }
}

// the hashed files live for a year: a new version of the editor has a new name
const IMMUTABLE = 'public, max-age=31536000, immutable';

const JS = 'text/javascript; charset=utf-8';

interface Ide {
  page: IdeFile;
  assets: Map<string, IdeFile>;
}

let ide: Promise<Ide> | undefined;

// Each piece is referenced by a relative URL, not inlined, so browsers cache it and a prefixing proxy still works.
function load(): Promise<Ide> {
  ide ??= build();
  return ide;
}

async function build(): Promise<Ide> {
  const { css, editorWorkerService, favicon, graphqlWorker, js, jsonWorker } = await import('@graphql-yoga/render-graphiql/graphiql');
  const assets = new Map<string, IdeFile>();
  const asset = (ext: string, contentType: string, body: string | Buffer): string => {
    const file = new IdeFile(contentType, typeof body === 'string' ? Buffer.from(body, 'utf8') : body, IMMUTABLE);
    const name = `${file.hash}.${ext}`;
    assets.set(name, file);
    return `${IDE_ASSET_PREFIX.slice(1)}${name}`;
  };
  const icon = /^data:([^;,]+);base64,(.*)$/s.exec(favicon);
  const iconUrl = icon ? asset('ico', icon[1]!, Buffer.from(icon[2]!, 'base64')) : favicon;
  const stylesheetUrl = asset('css', 'text/css; charset=utf-8', css);
  const editorUrl = asset('js', JS, js);
  const workerUrls = {
    editorWorkerService: asset('js', JS, editorWorkerService),
    json: asset('js', JS, jsonWorker),
    graphql: asset('js', JS, graphqlWorker),
  };
  const options = { title: 'recs-gateway GraphiQL', endpoint: '/graphql', defaultQuery: DEFAULT_QUERY, shouldPersistHeaders: false };
  // Security: `<` escaped so no value can close the <script> element
  const inScript = (value: unknown): string => JSON.stringify(value).replace(/</g, '\\u003c');
  const html = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>${options.title}</title>
    <link rel="icon" href="${iconUrl}" />
    <link rel="stylesheet" href="${stylesheetUrl}" />
  </head>
  <body id="body" class="no-focus-outline">
    <noscript>You need to enable JavaScript to run this app.</noscript>
    <div id="root"></div>
    <script>
      (function () {
        var workers = ${inScript(workerUrls)};
        self['MonacoEnvironment'] = {
          globalAPI: false,
          getWorkerUrl: function (moduleId, label) {
            return new URL(workers[label], document.baseURI).href;
          },
        };
      })();
    </script>
    <script src="${editorUrl}"></script>
    <script>
      YogaGraphiQL.renderYogaGraphiQL(window.document.querySelector('#root'), ${inScript(options)});
    </script>
  </body>
</html>
`;
  return { page: new IdeFile('text/html; charset=utf-8', Buffer.from(html, 'utf8'), 'no-cache'), assets };
}

function chooseEncoding(acceptEncoding: string | undefined): Encoding {
  if (!acceptEncoding) return 'identity';
  const accepted = new Map<string, number>();
  for (const part of acceptEncoding.toLowerCase().split(',')) {
    const [name, ...params] = part.trim().split(';');
    const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    accepted.set(name!.trim(), q === undefined ? 1 : Number(q));
  }
  const wants = (name: string): boolean => (accepted.get(name) ?? accepted.get('*') ?? 0) > 0;
  if (wants('br')) return 'br';
  if (wants('gzip') || (accepted.get('x-gzip') ?? 0) > 0) return 'gzip';
  return 'identity';
}

// weak comparison, as RFC 9110 asks for If-None-Match
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed.replace(/^W\//, '') === etag;
  });
}

/** An answer for the IDE's route to send. */
export interface IdeResponse {
  status: number;
  headers: Record<string, string>;
  /** null for a 304 (and the caller sends no body for HEAD). */
  body: Buffer | null;
}

/** The answer to a request for the IDE: `file` null for the page, else a name under IDE_ASSET_PREFIX. */
export async function ideResponse(
  file: string | null,
  headers: { 'accept-encoding'?: string | undefined; 'if-none-match'?: string | undefined },
): Promise<IdeResponse | null> {
  const { page, assets } = await load();
  const served = file === null ? page : assets.get(file);
  if (served === undefined) return null;
  const encoding = chooseEncoding(headers['accept-encoding']);
  const etag = served.etag(encoding);
  const common: Record<string, string> = { etag, 'cache-control': served.cacheControl, vary: 'accept-encoding' };
  if (matches(headers['if-none-match'], etag)) return { status: 304, headers: common, body: null };
  const body = await served.bytes(encoding);
  return {
    status: 200,
    headers: {
      ...common,
      'content-type': served.contentType,
      'content-length': String(body.length),
      ...(encoding === 'identity' ? {} : { 'content-encoding': encoding }),
      'x-content-type-options': 'nosniff',
    },
    body,
  };
}

/** What the IDE's route needs: the rate limits its anonymous requests spend, and whose they are. */
export interface IdeRouteDeps {
  limiter: Pick<RateLimiter, 'admit'>;
  addresses: ClientAddresses;
}

/** The IDE's route: `(req, res, file)`, file null for the page. */
export function ideRoute({ limiter, addresses }: IdeRouteDeps): (req: IncomingMessage, res: ServerResponse, file: string | null) => Promise<void> {
  // each request spends a token of the address's bucket: the files are megabytes, served before authentication
  async function serveIde(req: IncomingMessage, res: ServerResponse, file: string | null): Promise<void> {
    const method = req.method ?? 'GET';
    try {
      await limiter.admit(null, addresses.of(req));
    } catch (error) {
      if (!(error instanceof GatewayError)) throw error;
      return sendJson(res, httpStatusOf[error.code], gatewayErrorBody(error), errorHeaders(error, req.headers));
    }
    const answer = await ideResponse(file, req.headers);
    if (answer === null) return sendJson(res, 404, graphqlError('No such file of the IDE', ErrorCode.NOT_FOUND));
    const vary = res.getHeader('vary');
    res.writeHead(answer.status, vary === undefined ? answer.headers : { ...answer.headers, vary: `${String(vary)}, ${answer.headers.vary}` });
    res.end(method === 'HEAD' || answer.body === null ? undefined : answer.body);
  }
  return serveIde;
}
