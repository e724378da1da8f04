/**
 * The limits every part agrees on: what one answer holds, what one request may ask for. The
 * numbers a deployment may change have their defaults in src/config/defaults.ts.
 */

/** The most recommendations one list holds: both interfaces (GraphQL `first`, the served REST) answer at most this many. */
export const MAX_RECOMMENDATIONS = 10;

/** The most item ids one request may look up: `items(itemIds)`, `_entities`' representations, one batch of the item loader. */
export const MAX_ITEM_IDS = 100;

/**
 * Limits on what one operation may ask for, checked once per distinct document (Apollo caches
 * validated documents), before anything runs. Defaults are generous for real clients: the
 * deepest sensible query (item -> recommendations -> edges -> node -> variantItems -> attributes)
 * is depth 6 and costs about 1,300.
 */
export interface QueryLimits {
  /**
   * MAX_DEPTH: nesting of fields; default 10. What lies below `__schema` or `__type` counts apart,
   * against INTROSPECTION_MAX_DEPTH or MAX_DEPTH, the larger (see src/graphql/limits.ts).
   */
  maxDepth: number;
  /** MAX_ALIASES: aliased fields in one operation; default 30. */
  maxAliases: number;
  /**
   * MAX_ALIAS_LENGTH: characters of an alias; default 100. An alias is written into the answer
   * for every value of its field, so a long one under a list multiplied the answer's bytes.
   */
  maxAliasLength?: number;
  /** MAX_DIRECTIVES: directives in one operation; default 20. */
  maxDirectives: number;
  /** MAX_TOKENS: lexical tokens in a document (checked by the parser); default 2000. */
  maxTokens: number;
  /** MAX_COST: fields weighted by how many times they run (a list field costs its `first`); default 5000. */
  maxCost: number;
  /**
   * Fields with one response name in one selection set, counting those its fragments bring into
   * it; default 10. Validation compares every pair of them (graphql-js's
   * OverlappingFieldsCanBeMerged), so its time grows with the square of this; a client rarely
   * repeats a field more than a couple of times (fragments that each ask for `id` do).
   */
  maxSameNameFields?: number;
  /**
   * MAX_TYPE_FIELDS: `__type` fields in one operation, each spread of a fragment counted (an
   * operation holds one `__schema` at most); default 5.
   */
  maxTypeFields?: number;
  /**
   * MAX_INTROSPECTION_COST: fields an operation's introspection (`__schema`, `__type`) answers,
   * counted on the schema, where the cost counts an introspection list as one whatever it holds;
   * default 10000 (graphql-js's getIntrospectionQuery, all options on, answers about 3,700).
   */
  maxIntrospectionCost?: number;
}

/** A token bucket's shape: it holds at most `burst` tokens and refills `ratePerSecond` a second. */
export interface BucketLimit {
  ratePerSecond: number;
  burst: number;
}

/**
 * Request rate limits. Every request spends a token of its principal's bucket, and a request of a
 * user's (by any of their keys or their password) one of the user's bucket too, so more keys buy
 * no more requests.
 *
 * Failed sign-ins: a wrong key spends a token of its client address's failure bucket; a password
 * sign-in reserves a token of the address's failure bucket and of the username's before the
 * scrypt work (given back when the password is right), so neither concurrency nor many addresses
 * get more guesses than the limit, and an address or username whose bucket is empty is answered
 * 429 without any password work. A valid API key is not refused for others' failures: a key is
 * checked even from a locked-out address, and only a wrong key from there gets the 429. Where a
 * check is a call to a remote key service, what an address's wrong keys cost it is bounded apart
 * (keyChecks), not by refusing the address's valid keys.
 */
export interface RateLimitSettings {
  /**
   * RATE_LIMIT_RPS / RATE_LIMIT_BURST: requests a second per principal, and the burst allowed
   * above that. A principal is the API key (by id), else the user (password sign-in), else the
   * client address for requests without credentials. Default 50/s, burst 100 (twice the rate
   * when RATE_LIMIT_RPS is set above 50); RATE_LIMIT_RPS=0 (null here) turns it off.
   */
  perPrincipal: BucketLimit | null;
  /**
   * RATE_LIMIT_PER_KEY: requests a second for particular API keys, by key id (`<uuid>=<rps>,…`);
   * each key's burst is twice its rate, and a rate of 0 exempts the key. A key id is no secret:
   * it is what apiKeys lists. Default: none.
   */
  perKey: Readonly<Record<string, number>>;
  /**
   * RATE_LIMIT_USER_RPS / RATE_LIMIT_USER_BURST: requests a second per user, over all their keys
   * and password sign-ins; a key with its own RATE_LIMIT_PER_KEY entry is limited by that entry
   * alone. Default twice the per-principal rate and burst (100/s, burst 200); off when the
   * per-principal limit is off, unless set. Absent here: off.
   */
  perUser?: BucketLimit | null;
  /**
   * AUTH_FAILURES_PER_MINUTE: failed authentications allowed per client address a minute, and
   * failed password sign-ins per username a minute (the burst is the same number). Default 10;
   * AUTH_FAILURES_PER_MINUTE=0 (null here) turns it off.
   */
  authFailures: BucketLimit | null;
  /**
   * AUTH_KEY_CHECKS_PER_MINUTE: where a key check is a call to a remote key service (REST mode),
   * the calls an address's keys may make that find no valid key, a minute (the burst the same): a
   * token is reserved before each call and given back when the key is valid. A valid key is
   * checked even from an address locked out by AUTH_FAILURES_PER_MINUTE, within this. Default 60;
   * off (null here, or absent) with 0, or with AUTH_FAILURES_PER_MINUTE=0.
   */
  keyChecks?: BucketLimit | null;
  /**
   * NEW_DOCUMENTS_RPS / NEW_DOCUMENTS_BURST: query texts a second that the gateway parses and
   * validates afresh, per user (over all their keys and password sign-ins), else per client
   * address; a text it knows, or one that runs on a known text's literal template, spends
   * nothing. Default 5/s, burst 20; NEW_DOCUMENTS_RPS=0 (null or absent here) turns it off.
   */
  newDocuments?: BucketLimit | null;
}

/**
 * What a slow or greedy client may hold. Node's own defaults (60 s for the headers, 300 s for a
 * whole request, no cap) let a few hundred slowloris sockets hold the process; these follow
 * Apollo Router (`traffic_shaping.router.timeout` 30 s) and nginx (`keepalive_timeout`,
 * `worker_connections 1024`), with a header deadline shorter than either's and a cap per address.
 */
export interface ServerLimits {
  /**
   * HEADERS_TIMEOUT_MS: the most a client may take to send a request's headers (node's
   * `server.headersTimeout`; Apollo Router's header_read_timeout, nginx's client_header_timeout);
   * then 408 and the connection is closed. A head comes in one write: the time is for a lossy
   * link's retransmissions, not for a client's pace. Default 5000.
   */
  headersTimeoutMs: number;
  /**
   * REQUEST_TIMEOUT_MS: the most a client may take to send a whole request, headers and body
   * (node's `server.requestTimeout`; nginx's client_body_timeout counts between reads instead);
   * then 408 and the connection is closed. The time taken to answer is REQUEST_DEADLINE_MS's.
   * At least HEADERS_TIMEOUT_MS. Default 30000.
   */
  requestTimeoutMs: number;
  /**
   * KEEP_ALIVE_TIMEOUT_MS: how long an idle keep-alive connection is kept (node's
   * `server.keepAliveTimeout`, nginx's keepalive_timeout). Behind a load balancer, set it above the
   * balancer's idle timeout. Default 5000 (node's).
   */
  keepAliveTimeoutMs: number;
  /**
   * MAX_CONNECTIONS: open client connections at most (node's `server.maxConnections`, nginx's
   * worker_connections); a connection past it is closed at once, unanswered. 0: no cap. Default 1024.
   */
  maxConnections: number;
  /**
   * MAX_CONNECTIONS_PER_ADDRESS: open connections one client network (an IPv4 address, an IPv6
   * /64) may have at most, by the connection's peer (no header is read yet); one past it is
   * closed at once, unanswered. A proxy in TRUST_PROXY is not capped: it carries every client's
   * connections. 0: no cap. Default 128: what a key's burst (100 requests at once) needs, an
   * eighth of MAX_CONNECTIONS's default.
   */
  maxConnectionsPerAddress: number;
  /**
   * LINGER_BYTES_PER_SECOND: bytes of refused bodies (a 413, or a 401 or 429 before the body)
   * one client network may have read and dropped after their answers, a second (a lingering close:
   * src/http/linger.ts); an address that lingered for none lately may have one refusal's whole
   * budget (16 MiB at most) at once. Past it, a refused body's connection is closed with its answer,
   * unread. A proxy in TRUST_PROXY has no such budget. 0: none, each refusal lingers within its own
   * budgets. Default 1048576.
   */
  lingerBytesPerSecond: number;
}
