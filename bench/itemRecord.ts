/**
 * Item record parsing benchmark (not a test): npx tsx bench/itemRecord.ts
 * parseItemRecord runs for every record of every upstream answer in REST mode (ten a
 * recommendation list). Prints µs per record on the real Walmart records of ../shared/data (when
 * present) and on the demo shop's records, against two references measured in the same run:
 * JSON.parse of the same record's text (the work that comes before it), and copying the same
 * fields, unconverted, onto a fresh object one at a time (how it was built before: most of that
 * cost is the object's changes of shape, which the fixed-shape ParsedItem avoids).
 */
import { existsSync, readFileSync } from 'node:fs';
import { buildDemo } from '../src/backends/embedded/demo.js';
import { parseItemRecord, toItemRecord } from '../src/model/itemRecord.js';
import { sharedData } from '../test/helpers/sharedData.js';

const ROUNDS = 20_000;

function perRecord(records: unknown[], parse: (record: unknown) => unknown): number {
  let sink = 0;
  for (let warm = 0; warm < 2_000; warm++) for (const record of records) sink += parse(record) === null ? 1 : 0;
  const t = process.hrtime.bigint();
  for (let round = 0; round < ROUNDS; round++) for (const record of records) sink += parse(record) === null ? 1 : 0;
  const ns = Number(process.hrtime.bigint() - t);
  if (sink < 0) console.log(sink);
  return ns / 1000 / (ROUNDS * records.length);
}

/** The reference build: each field the parsed item has, copied as it is onto a fresh object. */
function copyOneByOne(record: unknown): unknown {
  const raw = record as Record<string, unknown>;
  const out: Record<string, unknown> = { itemId: raw.itemId };
  for (const field of FIELDS) {
    const value = raw[field];
    if (value !== undefined) out[field] = value;
  }
  return out;
}
const FIELDS = Object.keys(parseItemRecord({ itemId: 1 })).filter((field) => field !== 'itemId');

const sets: [string, Record<string, unknown>[]][] = [];
const walmart = sharedData('walmart/search-response.json');
if (existsSync(walmart)) {
  sets.push(['Walmart search response (real records)', (JSON.parse(readFileSync(walmart, 'utf8')) as { items: Record<string, unknown>[] }).items]);
}
sets.push(['demo shop (the records the bench upstream serves)', [...buildDemo().catalog.values()].slice(0, 10).map(toItemRecord)]);

console.log('records                                              n   parseItemRecord   JSON.parse   one-by-one copy   vs JSON.parse   vs copy');
for (const [name, records] of sets) {
  const texts = records.map((record) => JSON.stringify(record));
  const parse = perRecord(records, parseItemRecord);
  const json = perRecord(texts, (text) => JSON.parse(text as string));
  const copy = perRecord(records, copyOneByOne);
  console.log(
    `${name.padEnd(50)} ${String(records.length).padStart(3)}   ${parse.toFixed(2).padStart(12)} µs   ${json.toFixed(2).padStart(7)} µs   ` +
      `${copy.toFixed(2).padStart(12)} µs   ${(parse / json).toFixed(2).padStart(12)}x   ${(parse / copy).toFixed(2).padStart(6)}x`,
  );
}
console.log(`node ${process.version}; ${ROUNDS} rounds after 2000 of warm-up`);
