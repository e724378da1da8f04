/**
 * Loads DATA_DIR/recs.db and builds the model in a worker thread, so that a running server
 * rebuilds after an import without blocking its event loop for seconds. Posts the item records
 * (JSON text, in chunks the main thread parses between requests) and then the model's typed
 * arrays, transferred rather than copied.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { parseItemRecord } from '../../../ports/itemRecord.js';
import { Catalog } from '../catalog.js';
import { EventLog } from '../events/event.js';
import { RecsStore } from '../store.js';
import { buildModel } from './model.js';
import type { BuildMessage, BuildRequest } from './builtModel.js';
import { toBuiltModel, transferList } from './builtModel.js';

const RECORDS_PER_MESSAGE = 2_000;

function post(message: BuildMessage, transfer: ArrayBuffer[] = []): void {
  parentPort!.postMessage(message, transfer);
}

function run({ dataDir, options }: BuildRequest): void {
  const t0 = performance.now();
  const store = RecsStore.openReadOnly(dataDir);
  if (store === null) {
    post({ type: 'empty', version: '' });
    return;
  }
  try {
    const version = store.importsVersion();
    const catalog = new Catalog();
    let chunk: string[] = [];
    for (const record of store.catalogRecords()) {
      catalog.add(parseItemRecord(JSON.parse(record)));
      chunk.push(record);
      if (chunk.length === RECORDS_PER_MESSAGE) {
        post({ type: 'records', records: chunk });
        chunk = [];
      }
    }
    if (catalog.size === 0) {
      post({ type: 'empty', version });
      return;
    }
    if (chunk.length > 0) post({ type: 'records', records: chunk });
    const log = new EventLog();
    store.loadEvents(log);
    const loadMs = performance.now() - t0;
    const model = toBuiltModel(buildModel(log, options, catalog));
    post({ type: 'model', version, events: log.length, loadMs, model }, transferList(model));
  } finally {
    void store.close();
  }
}

run(workerData as BuildRequest);
