import { describe, expect, it } from 'vitest';
import type { CallOptions, ItemModel, RecommendationKind, RecommendationListModel, RecsService } from '../../src/ports/backend.js';
import { CachingRecsService } from '../../src/cache/cachingRecs.js';
import { MemoryCache } from '../../src/cache/memory.js';
import { CLIENT_GONE } from '../../src/shared/callSignal.js';
import { ErrorCode, GatewayError, upstreamUnavailable } from '../../src/errors.js';

/**
 * Concurrent misses for one list or one item share one upstream call (CachingRecsService), made
 * with the first request's signal: when that one leaves (a mobile client closing its connection)
 * or its deadline passes, the call stops, and a request that joined it and is still waiting must
 * not be answered with that stop: it asks again. The upstream here holds its answers until
 * released and heeds the call's signal, as the REST backend does (undici aborts the request; the
 * caller gets UPSTREAM_UNAVAILABLE).
 */
class HeldUpstream implements RecsService {
  readonly itemCalls: { ids: number[]; signal: AbortSignal | undefined }[] = [];
  readonly listCalls: (AbortSignal | undefined)[] = [];
  private release!: () => void;
  private gate = new Promise<void>((resolve) => (this.release = resolve));

  open(): void {
    this.release();
  }

  async getItems(ids: readonly number[], options?: CallOptions): Promise<(ItemModel | null)[]> {
    this.itemCalls.push({ ids: [...ids], signal: options?.signal });
    await this.held(options?.signal);
    return ids.map((itemId) => ({ itemId, name: `Item ${itemId}`, attributes: [] }));
  }

  async recommend(kind: RecommendationKind, anchorId: number, options?: CallOptions): Promise<RecommendationListModel> {
    this.listCalls.push(options?.signal);
    await this.held(options?.signal);
    const ids = [anchorId + 1, anchorId + 2];
    return {
      anchorId,
      kind,
      entries: ids.map((itemId, i) => ({ rank: i + 1, itemId, score: null, evidence: 0, source: 'UPSTREAM' as const })),
      items: ids.map((itemId) => ({ itemId, name: `Item ${itemId}`, attributes: [] })),
    };
  }

  private held(signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const stop = (): void => reject(upstreamUnavailable('recommendations', 'no answer before the request deadline'));
      if (signal?.aborted) return stop();
      signal?.addEventListener('abort', stop, { once: true });
      void this.gate.then(resolve);
    });
  }
}

/** A request's options: its signal aborted when its client goes (CLIENT_GONE) or its deadline passes. */
function request(): { options: CallOptions; gone: () => void; pastDeadline: () => void } {
  const controller = new AbortController();
  return {
    options: { signal: controller.signal },
    gone: () => controller.abort(CLIENT_GONE),
    pastDeadline: () => controller.abort(new Error('deadline')),
  };
}

/** Lets the gateway's own promise chains (the cache read before the upstream call) run. */
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 10));

async function refusal(answer: Promise<unknown>): Promise<string | undefined> {
  const error = await answer.then(() => undefined, (caught: unknown) => caught);
  return error instanceof GatewayError ? error.code : String(error);
}

describe('one upstream call shared by the requests that miss together', () => {
  it("answers the others when the first request's client goes: they ask again", async () => {
    const upstream = new HeldUpstream();
    const recs = new CachingRecsService(upstream, new MemoryCache());
    const [first, second, third] = [request(), request(), request()];
    const firstAnswer = recs.recommend('POST_BROWSE', 10, first.options);
    const others = [recs.recommend('POST_BROWSE', 10, second.options), recs.recommend('POST_BROWSE', 10, third.options)];
    await settle();
    expect(upstream.listCalls).toHaveLength(1);
    first.gone();
    expect(await refusal(firstAnswer)).toBe(ErrorCode.UPSTREAM_UNAVAILABLE);
    await settle();
    // before: both got the first's UPSTREAM_UNAVAILABLE; now one call again, shared by the two
    expect(upstream.listCalls.map((signal) => signal?.aborted)).toEqual([true, false]);
    upstream.open();
    expect((await Promise.all(others)).map((list) => list.entries.map((entry) => entry.itemId))).toEqual([[11, 12], [11, 12]]);
  });

  it("answers a later request when the first one's deadline passes, items as lists", async () => {
    const upstream = new HeldUpstream();
    const recs = new CachingRecsService(upstream, new MemoryCache());
    const [first, second] = [request(), request()];
    const firstItems = recs.getItems([1, 2], first.options);
    await settle();
    const secondItems = recs.getItems([2, 3], second.options);
    await settle();
    // 2 is in flight for the first request: the second asks only for 3
    expect(upstream.itemCalls.map((call) => call.ids)).toEqual([[1, 2], [3]]);
    first.pastDeadline();
    expect(await refusal(firstItems)).toBe(ErrorCode.UPSTREAM_UNAVAILABLE);
    await settle();
    expect(upstream.itemCalls.map((call) => [call.ids, call.signal?.aborted])).toEqual([[[1, 2], true], [[3], false], [[1, 2], false]]);
    upstream.open();
    expect((await secondItems).map((item) => item?.itemId)).toEqual([2, 3]);
  });

  it('answers a request whose own client went with the stop, and asks nothing again for it', async () => {
    const upstream = new HeldUpstream();
    const recs = new CachingRecsService(upstream, new MemoryCache());
    const [first, second] = [request(), request()];
    const answers = [recs.recommend('NEXT_BEST_PRODUCT', 10, first.options), recs.recommend('NEXT_BEST_PRODUCT', 10, second.options)];
    await settle();
    second.gone();
    first.gone();
    expect(await Promise.all(answers.map(refusal))).toEqual([ErrorCode.UPSTREAM_UNAVAILABLE, ErrorCode.UPSTREAM_UNAVAILABLE]);
    await settle();
    expect(upstream.listCalls).toHaveLength(1);

    const third = request();
    const thirdAnswer = recs.recommend('NEXT_BEST_PRODUCT', 10, third.options);
    await settle();
    expect(upstream.listCalls).toHaveLength(2);
    upstream.open();
    expect((await thirdAnswer).anchorId).toBe(10);
  });
});
