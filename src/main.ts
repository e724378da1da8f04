import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
// Only node's own modules load up front: --help answers at once, and serve listens (and
// answers /healthz) before Apollo, the stores and the recommender are loaded.
import type { Config } from './config/env.js';
import type { createLogger } from './logger.js';
import type { Gateway } from './http/server.js';
import type { Backend } from './ports/backend.js';
import type { SharedCache } from './ports/cache.js';
import type { UpstreamObserver } from './ports/observers.js';

const USAGE = `Usage: recs-gateway <command> [options]

Commands:
  serve                       start the gateway (what npm start runs)
  user add <username>         create a user of the embedded key store
  user passwd|remove|list     change a user's password, remove a user and its keys, list users
  import events <file>        add an event log (views, purchases) to DATA_DIR/recs.db
  import catalog <file>       add item records to DATA_DIR/recs.db
  prune events                delete the events too old to count (RECS_EVENTS_MAX_AGE_DAYS) from the store
  evaluate                    measure the recommender on an event log (HR@10, NDCG@10, coverage)
  manifest <files or dirs>    write a trusted-documents manifest (TRUSTED_DOCUMENTS) from .graphql files
  --version                   print the version

Run recs-gateway <command> --help for a command's options. Configuration comes from
environment variables: see the README's configuration table.
`;

const SERVE_USAGE = `Usage: recs-gateway serve

Starts the GraphQL gateway on PORT (default 4000): POST and GET /graphql, the GraphiQL IDE at
/graphql in a browser, /healthz and /readyz. Settings come from the environment (PORT, DATA_DIR,
DATABASE_URL, REDIS_URL or REDIS_CLUSTER_NODES, BACKEND, ...). SIGTERM or SIGINT drains in-flight requests and stops;
a second signal, a second or more after the first, stops at once.
`;

interface Io {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: Record<string, string | undefined>;
}

const defaultIo = (): Io => ({ stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env });

export async function main(argv: string[], io: Io = defaultIo()): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'serve':
        return await serve(rest, io);
      case 'user': {
        const { runUser } = await import('./cli/userCommand.js');
        return await runUser(rest, io);
      }
      case 'import': {
        const [{ runImport }, { loadConfig }] = await Promise.all([import('./cli/importCommand.js'), import('./config/env.js')]);
        const config = loadConfig(io.env);
        return await runImport(rest, { dataDir: config.dataDir, databaseUrl: config.databaseUrl, stdout: io.stdout, stderr: io.stderr });
      }
      case 'prune': {
        const [{ runPrune }, { loadConfig }] = await Promise.all([import('./cli/pruneCommand.js'), import('./config/env.js')]);
        const config = loadConfig(io.env);
        return await runPrune(rest, { dataDir: config.dataDir, databaseUrl: config.databaseUrl, maxAgeDays: config.recsEventsMaxAgeDays, stdout: io.stdout, stderr: io.stderr });
      }
      case 'evaluate': {
        const { runEvaluate } = await import('./cli/evaluateCommand.js');
        return await runEvaluate(rest, io);
      }
      case 'manifest': {
        const { runManifest } = await import('./cli/manifestCommand.js');
        return await runManifest(rest, io);
      }
      case '--version':
      case '-v':
      case 'version': {
        // package.json is one level up from both src/ and dist/
        const { readFileSync } = await import('node:fs');
        const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
        io.stdout.write(`recs-gateway ${version}\n`);
        return 0;
      }
      case undefined:
      case '--help':
      case '-h':
      case 'help':
        io.stdout.write(USAGE);
        return command === undefined ? 2 : 0;
      default:
        io.stderr.write(`Unknown command: ${command}\n\n${USAGE}`);
        return 2;
    }
  } catch (error) {
    const [{ ConfigError }, { UserInputError }, { StoreOpenError }] = await Promise.all([
      import('./config/env.js'),
      import('./backends/embedded/keys/users.js'),
      import('./backends/embedded/dataFiles.js'),
    ]);
    // a bad setting stops a start with one line, as a failed start does
    if (error instanceof ConfigError) {
      io.stderr.write(`recs-gateway: ${error.message}\n`);
      return 2;
    }
    if (error instanceof UserInputError) {
      io.stderr.write(`${error.message}\n`);
      return 2;
    }
    if (error instanceof StoreOpenError) {
      io.stderr.write(`recs-gateway: ${error.message}\n`);
      return 1;
    }
    const { argsProblem } = await import('./cli/commandArgs.js');
    const problem = argsProblem(error, command ?? '');
    if (problem !== null) {
      io.stderr.write(`${problem}\n`);
      return 2;
    }
    throw error;
  }
}

/** A second signal this soon is the first passed on again (npm forwards what reached the group); later ones stop at once. */
export const SIGNAL_ECHO_MS = 1_000;

async function serve(argv: string[], io: Io): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    io.stdout.write(SERVE_USAGE);
    return 0;
  }
  const [{ loadConfig }, { asyncStdout, createLogger }, { configSecrets, startupFailureLine }] = await Promise.all([
    import('./config/env.js'),
    import('./logger.js'),
    import('./cli/startup.js'),
  ]);
  const config = loadConfig(io.env);
  const log = createLogger({ level: config.logLevel, destination: io.stdout === process.stdout ? asyncStdout() : io.stdout });
  // a signal while starting stops at once: nothing is served yet to drain
  const stopWhileStarting = (signal: NodeJS.Signals) => {
    log.warn({ signal }, 'stopped before the gateway was ready');
    process.exit(0);
  };
  process.on('SIGTERM', stopWhileStarting);
  process.on('SIGINT', stopWhileStarting);
  const gateway = await start(config, log, io).catch((error: unknown) => {
    const debug = ['debug', 'trace'].includes(config.logLevel);
    io.stderr.write(`${startupFailureLine(error, configSecrets([config.databaseUrl, config.redisUrl, ...(config.redisClusterNodes ?? [])], [config.recsApiKey, config.rateLimitKeySecret, config.recsTrackingSecret]), debug)}\n`);
    return null;
  });
  process.off('SIGTERM', stopWhileStarting);
  process.off('SIGINT', stopWhileStarting);
  if (gateway === null) return 1;
  const { stop: stopGateway, stopTracing } = gateway;
  return new Promise<number>((resolve) => {
    let firstAt: number | undefined;
    const onSignal = (signal: NodeJS.Signals) => {
      if (firstAt !== undefined) {
        // one stop delivered twice: Ctrl-C reaches npm and the gateway both, and npm passes its own on
        if (performance.now() - firstAt < SIGNAL_ECHO_MS) return;
        log.warn({ signal }, 'second signal: exiting now');
        process.exit(1);
      }
      firstAt = performance.now();
      log.info({ signal }, 'draining in-flight requests');
      stopGateway()
        .then(stopTracing)
        .then(
          () => {
            log.info('stopped');
            resolve(0);
          },
          (error: unknown) => {
            log.error({ err: error }, 'stop failed');
            resolve(1);
          },
        );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}

/** Everything serve opens, in order; a failure closes what was opened. It listens first, so a busy
 * port fails at once and /healthz answers while the slow parts load. */
async function start(config: Config, log: ReturnType<typeof createLogger>, io: Io): Promise<{ stop: Gateway['stop']; stopTracing: () => Promise<void> }> {
  const [{ listenFailure }, { createHttpServer, listen, listenAddress, StartingAnswers }] = await Promise.all([
    import('./cli/startup.js'),
    import('./http/listener.js'),
  ]);
  const httpServer = createHttpServer(config.server, config.trustProxy);
  try {
    await listen(httpServer, config.port, config.host);
  } catch (error) {
    throw listenFailure(error, config.port, config.host) ?? error;
  }
  const starting = new StartingAnswers(httpServer, config.corsOrigins);
  const where = listenAddress(httpServer);
  const place = {
    url: `${where.localUrl}/graphql`,
    address: where.address,
    port: where.port,
    // `::` takes IPv4 too (node listens dual-stack); 0.0.0.0 takes no IPv6
    interfaces: where.allInterfaces ? `${where.address === '0.0.0.0' ? 'all IPv4 interfaces' : 'all'} (set HOST=127.0.0.1 to take connections from this machine only)` : where.address,
    backend: config.backend,
  };
  const closers: (() => Promise<unknown>)[] = [
    () =>
      new Promise<void>((resolve) => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  ];
  try {
    const [{ openCache }, { GatewayMetrics }, { combineObservers, startTracing, tracingUpstreamObserver }, { RateLimiter }, { createGateway }] =
      await Promise.all([
        import('./cache/index.js'),
        import('./observability/metrics.js'),
        import('./observability/tracing.js'),
        import('./auth/rateLimit.js'),
        import('./http/server.js'),
      ]);
    const stopTracing = await startTracing(config);
    closers.push(stopTracing);
    const metrics = new GatewayMetrics({ processMetrics: true, operationNames: config.metricsOperationNames, operationNamesPerUser: config.metricsOperationNamesPerUser });
    const cache = openCache(config, { log });
    closers.push(() => cache.close());
    const limiter = RateLimiter.open(config.rateLimits, { url: config.redisUrl, cluster: config.redisClusterNodes, keyPrefix: config.redisKeyPrefix, secret: config.rateLimitKeySecret });
    closers.push(() => limiter.close());
    const backend = await openBackend(config, {
      cache,
      upstreamObserver: combineObservers(metrics.upstreamObserver, tracingUpstreamObserver),
      log: (line) => log.info(line),
      step: (what) => starting.waitFor(what),
      // shown once on the terminal, never through the structured log
      onFirstAdmin: (password) =>
        io.stderr.write(
          `\nNo users yet: created the administrator "admin" with the password\n\n    ${password}\n\n` +
            'It is shown this once. Create a key with it (see the README), or add users with `recs-gateway user add`.\n\n',
        ),
    });
    closers.push(() => backend.close());
    starting.waitFor('starting the GraphQL engine');
    const gateway = await createGateway({ config, backend, cache, log, limiter, metrics, httpServer, handOver: () => starting.handOver() });
    closers.length = 0;
    closers.push(stopTracing, () => gateway.stop());
    // said once nothing of the start can fail any more, so a failed start prints its one line alone
    log.info(place, 'recs-gateway listening');
    log.info({ url: place.url }, 'recs-gateway ready');
    return { stop: () => gateway.stop(), stopTracing };
  } catch (error) {
    // nothing left open may keep the process from exiting (a Redis client retries forever)
    for (const close of closers.reverse()) await close().catch(() => undefined);
    throw error;
  }
}

export interface OpenBackendHooks {
  cache: SharedCache;
  onFirstAdmin?: (password: string) => void;
  log?: (line: string) => void;
  /** What the opening does now, for /readyz while the gateway starts. */
  step?: (what: string) => void;
  upstreamObserver?: UpstreamObserver;
  /** The REST backend's breakers' clock, ms; default Date.now. */
  now?: () => number;
}

/** The configured backend, decided once. REST recommendations go through the shared cache; the
 * embedded one answers from memory faster than a Redis round trip, so it is not cached. */
export async function openBackend(config: Config, hooks: OpenBackendHooks): Promise<Backend> {
  if (config.backend === 'rest') {
    const [{ createRestBackend }, { CachingRecsService, CachingIngestService }, { RedisChangeFeed }, { redisTarget }] = await Promise.all([
      import('./backends/rest/index.js'),
      import('./cache/cachingRecs.js'),
      import('./cache/changeFeed.js'),
      import('./cache/redis.js'),
    ]);
    const rest = createRestBackend({
      apiKeyServiceUrl: config.apiKeyServiceUrl!,
      recsServiceUrl: config.recsServiceUrl!,
      recsApiKey: config.recsApiKey!,
      ...config.upstream,
      sharedCache: hooks.cache,
      ...(hooks.upstreamObserver ? { observer: hooks.upstreamObserver } : {}),
      ...(hooks.now ? { now: hooks.now } : {}),
    });
    const recs = new CachingRecsService(rest.recs, hooks.cache, {
      itemTtlSeconds: config.cacheItemTtlSeconds,
      recsTtlSeconds: config.cacheRecsTtlSeconds,
      negativeTtlSeconds: config.cacheNegativeTtlSeconds,
    });
    const listeners: (() => void)[] = [];
    const changed = (): void => {
      for (const listener of listeners) listener();
    };
    // on a shared Redis, a write forwarded by any gateway drops what every one of them cached
    const redis = redisTarget(config);
    const feed = redis ? new RedisChangeFeed({ ...redis, keyPrefix: config.redisKeyPrefix, commandTimeoutMs: 500 }) : null;
    if (feed !== null) {
      recs.onOthersChange(changed);
      await recs.follow(feed);
    }
    return {
      keys: rest.keys,
      ingest: new CachingIngestService(rest.ingest, recs, changed),
      recs,
      onDataChange: (listener) => listeners.push(listener),
      check: () => rest.check(),
      listCountSink: rest.listCountSink,
      close: async () => {
        recs.unfollow();
        await feed?.close();
        await rest.close();
      },
      breakerState: () => rest.breakerState(),
    };
  }
  const [{ createEmbeddedBackend }, { openKeyStore }, { ensureFirstAdmin }, { openEmbeddedRecs }] = await Promise.all([
    import('./backends/embedded/index.js'),
    import('./backends/embedded/keys/index.js'),
    import('./backends/embedded/keys/users.js'),
    import('./backends/embedded/openRecs.js'),
  ]);
  hooks.step?.('opening the key store');
  const store = await openKeyStore(config);
  const say = hooks.log ?? ((): void => {});
  const keyOptions = { verifiedPasswordTtlMs: config.verifiedPasswordTtlSeconds * 1000, maxKeysPerUser: config.maxKeysPerUser };
  const ingestOptions = { maxItems: config.recsMaxItems, modelWaitMs: config.requestDeadlineMs };
  const roles = config.recsRole === 'all' ? null : await import('./backends/embedded/roles.js');
  const roleOptions = { connectionString: config.databaseUrl ?? '', maxLagSeconds: config.recsMaxLagSeconds, eventsMaxAgeDays: config.recsEventsMaxAgeDays, say };
  if (roles !== null && config.recsRole === 'serve') {
    const backend = await roles.openServeBackend(store, { ...roleOptions, keyOptions, ingestOptions }).catch(async (error: unknown) => {
      await store.close();
      throw error;
    });
    const password = await ensureFirstAdmin(store);
    if (password !== null) hooks.onFirstAdmin?.(password);
    return backend;
  }
  hooks.step?.('loading the recommender');
  // the recommender first: a start failing on recs.db must not show an admin password it then loses
  const recs = await openEmbeddedRecs({
    dataDir: config.dataDir,
    databaseUrl: config.databaseUrl,
    followIntervalMs: config.recsFollowIntervalMs,
    // a write waiting on another process's lock answers 503 within the request's deadline, as an upstream
    // would: past a client's timeout it might be stored after the client was told it failed, then resent
    storeLockRetryMs: config.requestDeadlineMs,
    model: { maxAgeDays: config.recsEventsMaxAgeDays, nextBestRebuildSeconds: config.recsNbpRebuildSeconds },
    ...(hooks.log ? { log: hooks.log } : {}),
  }).catch(async (error: unknown) => {
    await store.close();
    throw error;
  });
  const password = await ensureFirstAdmin(store);
  if (password !== null) hooks.onFirstAdmin?.(password);
  const backend = createEmbeddedBackend(store, recs, keyOptions, ingestOptions);
  return roles === null ? backend : roles.asLearner(backend, recs, roleOptions);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main(process.argv.slice(2));
}
