import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../logger.js';
import type { GatewayMetrics } from './metrics.js';

/** The request being served, handed along explicitly: an AsyncLocalStorage's promise hooks tax every promise. */
export interface RequestRecord {
  id: string;
  operation?: string;
}

interface Sinks {
  log: Logger;
  metrics: GatewayMetrics;
  /** The metrics' route label of a path (the HTTP layer's route table knows the routes). */
  labelOf: (path: string) => string;
}

/** A class, so a request costs one small object and no closure. */
class Observation implements RequestRecord {
  operation?: string;
  readonly started = performance.now();

  constructor(
    readonly id: string,
    readonly req: IncomingMessage,
    readonly sinks: Sinks,
  ) {}
}

const OBSERVATION = Symbol('observation');
type ObservedResponse = ServerResponse & { [OBSERVATION]?: Observation };

/** Shared by every response ('close' calls it with the response as `this`): no closure a request. */
function onClose(this: ObservedResponse): void {
  const observation = this[OBSERVATION];
  if (observation === undefined) return;
  const { req, sinks } = observation;
  const seconds = (performance.now() - observation.started) / 1000;
  const target = req.url ?? '/';
  const query = target.indexOf('?');
  // an absolute-form target may hold user:password: logged by its path alone
  const whole = query === -1 ? target : target.slice(0, query);
  const path = whole.startsWith('/') ? whole : '(not a path)';
  const status = this.writableFinished ? this.statusCode : 0;
  sinks.metrics.httpAnswered(sinks.labelOf(path), req.method ?? 'GET', status, seconds);
  if (!sinks.log.isLevelEnabled('info')) return;
  sinks.log.info(
    {
      requestId: observation.id,
      method: req.method,
      path: path.slice(0, 256),
      status,
      durationMs: Math.round(seconds * 10_000) / 10,
      ...(observation.operation !== undefined ? { operation: observation.operation } : {}),
      ...(this.writableFinished ? {} : { aborted: true }),
    },
    'request',
  );
}

/** Writes the access-log line and metrics when the response is done; the path without its query, which can hold a key. */
export function observeRequest(req: IncomingMessage, res: ServerResponse, id: string, sinks: Sinks): RequestRecord {
  const observation = new Observation(id, req, sinks);
  (res as ObservedResponse)[OBSERVATION] = observation;
  res.on('close', onClose);
  return observation;
}
