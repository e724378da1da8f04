/** Reads the store and builds the model in a worker thread, so that a reload does not block the
 * event loop: records go in chunks parsed between requests, arrays transferred rather than copied. */
import { parentPort, workerData } from 'node:worker_threads';
import { parseStoredRecord } from '../../model/itemRecord.js';
import { buildModel, Catalog, EventLog, maxAgeMsOf, toBuiltModel, transferList } from '../../recommender/index.js';
import type { EventLogColumns, ModelOptions, RecModel } from '../../recommender/index.js';
import type { RecsDataStore, StoreHead } from './liveStore.js';
import type { LoadMessage, LoadRequest } from './loadFromStore.js';
import { demoWithStored, openRecsData } from './loadFromStore.js';

const RECORDS_PER_MESSAGE = 2_000;

function post(message: LoadMessage, transfer: ArrayBuffer[] = []): void {
  parentPort!.postMessage(message, transfer);
}

async function run({ source, options }: LoadRequest): Promise<void> {
  const t0 = performance.now();
  const store = await openRecsData(source, { readOnly: true });
  if (store === null) {
    post({ type: 'empty', head: { generation: 0, lastEventId: 0, lastItemSeq: 0 } });
    return;
  }
  try {
    const catalog = new Catalog();
    const log = new EventLog();
    // Keys as the log's dense indexes, named by their store ids in decimal: the names rowToRecEvent
    // gives (see EventLog.fromColumns), without a string made and hashed per event (1M events: 2 s less).
    const names: [string[], string[], string[]] = [[], [], []];
    let dense = new Int32Array(1 << 16).fill(-1);
    const denseOf = (ns: 0 | 1 | 2, id: number): number => {
      if (id < 0) return -1;
      if (id >= dense.length) {
        const grown = new Int32Array(Math.max(id + 1, dense.length * 2)).fill(-1);
        grown.set(dense);
        dense = grown;
      }
      let index = dense[id]!;
      if (index === -1) {
        index = names[ns].length;
        names[ns].push(String(id));
        dense[id] = index;
      }
      return index;
    };
    let chunk: string[] = [];
    const head = await store.snapshot({
      record(json) {
        catalog.add(parseStoredRecord(json));
        chunk.push(json);
        if (chunk.length === RECORDS_PER_MESSAGE) {
          post({ type: 'records', records: chunk });
          chunk = [];
        }
      },
      event([, kind, itemId, session, user, order, time]) {
        log.addKeys(kind, itemId, denseOf(0, session), denseOf(1, user), denseOf(2, order), time);
      },
    }, { maxAgeMs: maxAgeMsOf(options) });
    if (catalog.size === 0) {
      await demoInWorker(store, options, t0);
      return;
    }
    if (chunk.length > 0) post({ type: 'records', records: chunk });
    postModel(head, log, { ...log.columns(), names }, buildModel(log, options, catalog), performance.now() - t0, false);
  } finally {
    await store.close();
  }
}

/** The model and the log's columns, transferred. */
function postModel(head: StoreHead, log: EventLog, columns: EventLogColumns, built: RecModel, loadMs: number, demo: boolean): void {
  const model = toBuiltModel(built);
  const logBuffers = [columns.kind, columns.item, columns.session, columns.user, columns.order, columns.time, columns.itemIds].map((a) => a.buffer as ArrayBuffer);
  post({ type: 'model', head, events: log.length, loadMs, model, log: columns, demo }, [...transferList(model), ...logBuffers]);
}

/** A store without a catalogue: the demo shop with the stored events, built here too, since on the
 * event loop it would hold every request; its records go over in chunks like a store's. */
async function demoInWorker(store: RecsDataStore, options: ModelOptions, t0: number): Promise<void> {
  const { catalog, log, data, head } = await demoWithStored(store, options);
  for (let i = 0; i < data.records.length; i += RECORDS_PER_MESSAGE) {
    post({ type: 'records', records: data.records.slice(i, i + RECORDS_PER_MESSAGE).map((r) => JSON.stringify(r)) });
  }
  postModel(head, log, log.columns(), buildModel(log, options, catalog), performance.now() - t0, true);
}

await run(workerData as LoadRequest);
