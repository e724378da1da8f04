import { describe, expect, it } from 'vitest';
import { FULL_RELOAD_EVENTS, reloadBound } from '../../../src/backends/embedded/storeFollower.js';

/** When a follower reloads whole rather than apply a backlog: a reload reads every event held again, so the
 * bound grows with the window (a learner holding 10 million events applied 500,000 in 17.5 s; a reload took 26). */
describe('the follower\'s reload bound', () => {
  it('is FULL_RELOAD_EVENTS for a small window, and a fifth of the events held for a large one', () => {
    expect(reloadBound(0)).toBe(FULL_RELOAD_EVENTS);
    expect(reloadBound(1_000_000)).toBe(FULL_RELOAD_EVENTS);
    expect(reloadBound(10_000_000)).toBe(2_000_000);
    // the 10M store's backlog of 500,000 is applied, not reloaded
    expect(500_000 > reloadBound(10_000_000)).toBe(false);
    expect(500_000 > reloadBound(1_000_000)).toBe(true);
  });
});
