import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { parseStoredRecord } from '../../model/itemRecord.js';
import { Catalog, EventLog, fromBuiltModel, maxAgeMsOf, startModuleWorker } from '../../recommender/index.js';
import type { BuiltModel, EventLogColumns, ModelOptions, RecModel } from '../../recommender/index.js';
import type { RecsDataStore, RecsSource, StoreHead } from './liveStore.js';
import { rowToRecEvent } from './liveStore.js';
import { buildDemo, demoEndsAt } from './demo.js';
import type { DemoData } from './demo.js';
import { PostgresRecsStore } from './postgresRecsStore.js';
import { DB_FILE, RecsStore, type RecsStoreOptions } from './store.js';

export interface LoadRequest {
  source: RecsSource;
  options: ModelOptions;
}

/** The load worker's messages, in order: records*, then model (or empty when there is no store yet). */
export type LoadMessage =
  | { type: 'records'; records: string[] }
  | { type: 'model'; head: StoreHead; events: number; loadMs: number; model: BuiltModel; log: EventLogColumns; demo: boolean }
  | { type: 'empty'; head: StoreHead };

/** A store opened from a source; null where `readOnly` or `existing` finds none (no file, no tables). */
export async function openRecsData(source: RecsSource, options: { readOnly?: boolean; existing?: boolean } & RecsStoreOptions = {}): Promise<RecsDataStore | null> {
  if (source.kind === 'sqlite') {
    if (options.readOnly === true) return RecsStore.openReadOnly(source.dataDir);
    if (options.existing === true && !existsSync(join(source.dataDir, DB_FILE))) return null;
    return RecsStore.open(source.dataDir, options.lockRetryMs === undefined ? {} : { lockRetryMs: options.lockRetryMs });
  }
  const store = new PostgresRecsStore({
    connectionString: source.connectionString,
    ...(source.schema ? { schema: source.schema } : {}),
    ...(options.lockRetryMs !== undefined ? { lockTimeoutMs: options.lockRetryMs } : {}),
    max: options.readOnly === true ? 1 : 4,
  });
  try {
    if (options.existing === true && !(await store.hasTables())) {
      await store.close();
      return null;
    }
    if (options.readOnly !== true) await store.migrate();
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}

/** The demo shop with the stored events added: what a store without a catalogue serves. */
export async function demoWithStored(store: RecsDataStore, options: ModelOptions): Promise<{ catalog: Catalog; log: EventLog; data: DemoData; head: StoreHead }> {
  const { catalog, log, data } = buildDemo({ endsAt: demoEndsAt() });
  const head = await store.snapshot({ record: () => undefined, event: (row) => log.add(rowToRecEvent(row)) }, { maxAgeMs: maxAgeMsOf(options) });
  return { catalog, log, data, head };
}

/** A catalogue, log and model (`demo`: the demo shop with the stored events); only the head without a store yet. */
export type Loaded =
  | { empty: false; head: StoreHead; catalog: Catalog; log: EventLog; model: RecModel; events: number; loadMs: number; demo: boolean }
  | { empty: true; head: StoreHead };

/** Item records parsed a turn of the event loop while a load's catalogue comes over. */
const RECORDS_PER_TURN = 250;

/** Starts one of this folder's worker modules (see startModuleWorker). */
export function startWorker(name: 'loadWorker' | 'rebuildWorker', workerData?: unknown): Worker {
  return startModuleWorker(import.meta.url, name, { workerData });
}

/** Reads the store and builds the model in a worker thread, so that the event loop is never held long. */
export function loadInWorker(request: LoadRequest, onWorker: (worker: Worker | null) => void = () => {}): Promise<Loaded> {
  const worker = startWorker('loadWorker', request);
  onWorker(worker);
  const catalog = new Catalog();
  return new Promise<Loaded>((resolve, reject) => {
    let settled = false;
    const settle = (error: Error | null, result?: Loaded): void => {
      if (settled) return;
      settled = true;
      onWorker(null);
      void worker.terminate();
      if (error === null) resolve(result!);
      else reject(error);
    };
    // a port hands over every queued message at once: parsed on arrival, the whole catalogue
    // held the loop. The last message waits its turn.
    const queue: string[] = [];
    let at = 0;
    let last: Exclude<LoadMessage, { type: 'records' }> | null = null;
    let pumping = false;
    const finish = (message: Exclude<LoadMessage, { type: 'records' }>): void => {
      if (message.type === 'empty') return settle(null, { empty: true, head: message.head });
      const model = fromBuiltModel(message.model);
      settle(null, {
        empty: false, head: message.head, catalog, log: EventLog.fromColumns(message.log, model.items), model,
        events: message.events, loadMs: message.loadMs, demo: message.demo,
      });
    };
    const pump = (): void => {
      if (settled) return;
      try {
        const end = Math.min(queue.length, at + RECORDS_PER_TURN);
        for (; at < end; at++) catalog.add(parseStoredRecord(queue[at]!));
        if (at < queue.length) return void setImmediate(pump);
        queue.length = 0;
        at = 0;
        pumping = false;
        if (last !== null) finish(last);
      } catch (error) {
        settle(error as Error);
      }
    };
    worker.on('message', (message: LoadMessage) => {
      try {
        if (message.type === 'records') queue.push(...message.records);
        else last = message;
        if (!pumping) {
          pumping = true;
          setImmediate(pump);
        }
      } catch (error) {
        settle(error as Error);
      }
    });
    worker.on('error', (error) => settle(error));
    // done and gone while its records are still being parsed here: the pump settles
    worker.on('exit', (code) => {
      if (last === null) settle(new Error(`the model load worker exited with code ${code} before it was done`));
    });
  });
}
