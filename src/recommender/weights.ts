import type { OrderWeights } from './neighbours.js';

export const DAY_MS = 86_400_000;

/**
 * Order weights are kept as multiples of 1/ORDER_SCALE (2520 = lcm(1..10), so 1/d for every
 * distance of the default window is an integer there) and recency weights on a 2^-12 grid of
 * their half-life step: every term added up is then exact in a double, so sums are the same in
 * whatever order groups come and go. That is what lets the live path (live.ts) add and subtract
 * groups and still give the lists of a full build bit for bit.
 */
export const ORDER_SCALE = 2520;

/**
 * A group's recency weight: 2^((t - reference)/H) with reference = referenceStep · H, on a fixed
 * grid of half-lives from the Unix epoch: the fraction within one step is rounded to 12 bits (a
 * relative error below 2^-12) and the whole steps are an exact power of two. Moving the reference
 * by m steps then scales every weight, and so every c and n, by exactly 2^-m, which leaves
 * c / n(a) (damping 0) bit for bit the same: the live path never revisits old groups because
 * time passed. The full build takes the step of the log's latest event as its reference.
 */
export function recencyWeight(time: number, halfLifeMs: number, referenceStep: number): number {
  const x = time / halfLifeMs;
  const step = Math.floor(x);
  return (Math.round(Math.pow(2, x - step) * 4096) / 4096) * Math.pow(2, step - referenceStep);
}

/** The reference step of recencyWeight for a log whose latest event is at `latest`. */
export function referenceStep(latest: number, halfLifeMs: number): number {
  return Math.floor(latest / halfLifeMs);
}

/** d ↦ ORDER_SCALE / d^exponent for d in 1..window (index 0 unused). */
export function orderDecay(order: OrderWeights): Float64Array {
  const decay = new Float64Array(order.window + 1);
  for (let d = 1; d < decay.length; d++) decay[d] = ORDER_SCALE / Math.pow(d, order.exponent);
  return decay;
}

/** n(a)^(d-1): a division where d = 0, as it is correctly rounded (an exact power-of-two scale passes through it). */
export function anchorFactor(na: number, damping: number): number {
  return na > 0 ? (damping === 0 ? 1 / na : Math.pow(na, damping - 1)) : 1;
}
