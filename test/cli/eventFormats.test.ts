import { existsSync, readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
import type { RecEvent } from '../../src/recommender/index.js';
import { csvFormat, presetFormat } from '../../src/cli/eventFormats.js';
import type { EventFormat, PresetName } from '../../src/cli/eventFormats.js';
import { readEventsFromString } from '../../src/cli/importEvents.js';
import { sharedData } from '../helpers/sharedData.js';

async function read(format: EventFormat, text: string): Promise<{ events: RecEvent[]; report: Awaited<ReturnType<typeof readEventsFromString>> }> {
  const events: RecEvent[] = [];
  const report = await readEventsFromString(text, format, (e) => events.push(e));
  return { events, report };
}

const preset = (name: PresetName): EventFormat => presetFormat(name);

describe('event import presets', () => {
  it('retailrocket: views and transactions, add-to-cart ignored, visitors as users', async () => {
    const { events, report } = await read(preset('retailrocket'), [
      'timestamp,visitorid,event,itemid,transactionid',
      '1433221332117,257597,view,355908,',
      '1433224214164,992329,addtocart,248676,',
      '1433223203944,599528,transaction,356475,4000',
    ].join('\n'));
    expect(report).toMatchObject({ lines: 4, events: 2, ignored: 1, malformed: 0 });
    expect(events).toEqual([
      { kind: 'view', session: null, user: '257597', itemId: 355908, time: 1433221332117, orderId: null },
      { kind: 'purchase', session: null, user: '599528', itemId: 356475, time: 1433223203944, orderId: '4000' },
    ]);
  });

  it('diginetica views and purchases: NA users are anonymous, time is day + timeframe', async () => {
    const views = await read(preset('diginetica-views'), 'session_id;user_id;item_id;timeframe;eventdate\n1;NA;81766;526309;2016-05-09\n2;5;31331;1031018;2016-05-09\n');
    expect(views.events).toEqual([
      { kind: 'view', session: '1', user: null, itemId: 81766, time: Date.UTC(2016, 4, 9) + 526309, orderId: null },
      { kind: 'view', session: '2', user: '5', itemId: 31331, time: Date.UTC(2016, 4, 9) + 1031018, orderId: null },
    ]);
    const buys = await read(preset('diginetica-purchases'), 'sessionId;userId;timeframe;eventdate;ordernumber;itemId\n150;18278;17100868;2016-05-06;16421;25911\n');
    expect(buys.events).toEqual([{ kind: 'purchase', session: '150', user: '18278', itemId: 25911, time: Date.UTC(2016, 4, 6) + 17100868, orderId: '16421' }]);
  });

  it('diginetica: a timeframe past its day stays within the session\'s day (a clock running months ahead would age every other event)', async () => {
    const day = 86_400_000;
    const buys = await read(preset('diginetica-purchases'), `sessionId;userId;timeframe;eventdate;ordernumber;itemId\n1;NA;${153 * day};2016-05-06;7;25911\n2;NA;${day - 5};2016-05-06;8;25912\n`);
    expect(buys.events.map((e) => e.time)).toEqual([Date.UTC(2016, 4, 6) + day - 1, Date.UTC(2016, 4, 6) + day - 5]);
  });

  it('diginetica: the first real lines of the shared files', async (context) => {
    const path = sharedData('diginetica/purchases.csv');
    if (!existsSync(path)) {
      context.skip(`${path} is absent: real-line check skipped`);
      return;
    }
    const head = readFileSync(path, 'utf8').split('\n').slice(0, 6).join('\n');
    const { events, report } = await read(preset('diginetica-purchases'), head);
    expect(report).toMatchObject({ events: 5, malformed: 0 });
    expect(events[0]).toMatchObject({ itemId: 25911, orderId: '16421', user: '18278' });
    expect(events[1]!.user).toBeNull();
  });

  it('yoochoose clicks and buys have no header; a session is its order', async () => {
    const clicks = await read(preset('yoochoose-clicks'), '1,2014-04-07T10:51:09.277Z,214536502,0\n1,2014-04-07T10:54:09.868Z,214536500,0\n');
    expect(clicks.events.map((e) => [e.session, e.itemId, e.time])).toEqual([['1', 214536502, Date.parse('2014-04-07T10:51:09.277Z')], ['1', 214536500, Date.parse('2014-04-07T10:54:09.868Z')]]);
    const buys = await read(preset('yoochoose-buys'), '420374,2014-04-06T18:44:58.314Z,214537888,12462,1\n');
    expect(buys.events).toEqual([{ kind: 'purchase', session: '420374', user: null, itemId: 214537888, time: Date.parse('2014-04-06T18:44:58.314Z'), orderId: '420374' }]);
  });

  it('taobao: pv and buy kept, cart and fav ignored, seconds become ms', async () => {
    const { events, report } = await read(preset('taobao'), '1,2268318,2520377,pv,1511544070\n1,2333346,2520771,cart,1511561733\n1,3830808,4181361,buy,1511593493\n');
    expect(report).toMatchObject({ events: 2, ignored: 1 });
    expect(events.map((e) => [e.kind, e.user, e.itemId, e.time])).toEqual([['view', '1', 2268318, 1511544070000], ['purchase', '1', 3830808, 1511593493000]]);
  });

  it('instacart: purchases grouped by order, ordered by order id then cart position', async () => {
    const path = sharedData('instacart/order-products-prior-head.csv');
    const text = existsSync(path) ? readFileSync(path, 'utf8').split('\n').slice(0, 4).join('\n') : 'order_id,product_id,add_to_cart_order,reordered\n2,33120,1,1\n2,28985,2,1\n2,9327,3,0';
    const { events } = await read(preset('instacart'), text);
    expect(events.map((e) => [e.kind, e.orderId, e.itemId, e.time])).toEqual([['purchase', '2', 33120, 2001], ['purchase', '2', 28985, 2002], ['purchase', '2', 9327, 2003]]);
  });

  it('csv: columns by header name, kind from a column, custom delimiter', async () => {
    const format = csvFormat({ item: 'sku', session: 'visit', time: 'ts', event: 'type', purchaseValues: ['order'], order: 'oid', delimiter: '|' });
    const { events, report } = await read(format, 'ts|visit|sku|type|oid\n1700000000|a|11|view|\n1700000005|a|12|order|x1\n1700000009|a|13|wishlist|\n');
    expect(report).toMatchObject({ events: 2, ignored: 1, malformed: 0 });
    expect(events).toEqual([
      { kind: 'view', session: 'a', user: null, itemId: 11, time: 1700000000000, orderId: null },
      { kind: 'purchase', session: 'a', user: null, itemId: 12, time: 1700000005000, orderId: 'x1' },
    ]);
  });

  it('csv without header: columns by 1-based position', async () => {
    const { events } = await read(csvFormat({ item: '2', user: '1', kind: 'purchase', header: false }), 'u7,42\n');
    expect(events).toEqual([{ kind: 'purchase', session: null, user: 'u7', itemId: 42, time: 1, orderId: null }]);
  });

  it('csv: a quoted field may hold the delimiter, and "" a quote', async () => {
    const { events, report } = await read(csvFormat({ item: 'sku', user: 'who' }), 'who,sku\n"Doe, Jane",42\n"say ""hi""",43\n"unclosed,44\n');
    expect(report).toMatchObject({ events: 3, malformed: 0 });
    // a quote never closed is read as written
    expect(events.map((e) => [e.user, e.itemId])).toEqual([['Doe, Jane', 42], ['say "hi"', 43], ['"unclosed', 44]]);
  });

  it('reports malformed lines with their line numbers and keeps the rest', async () => {
    const { events, report } = await read(preset('diginetica-views'), [
      'session_id;user_id;item_id;timeframe;eventdate',
      '1;NA;81766;526309;2016-05-09',
      '1;NA;not-an-item;526309;2016-05-09',
      'garbage',
      '1;NA;31331;1031018;2016-05-09',
    ].join('\n'));
    expect(events.map((e) => e.itemId)).toEqual([81766, 31331]);
    expect(report.malformed).toBe(2);
    expect(report.skipped.map((s) => s.line)).toEqual([3, 4]);
    expect(report.skipped[0]!.reason).toContain('item id');
  });
});
