import type { OrderWeights } from './neighbours.js';

export const DAY_MS = 86_400_000;

/** Order weights are multiples of 1/ORDER_SCALE (lcm(1..10)) and recency weights lie on a 2^-12 grid, so every term is
 * exact in a double and sums do not depend on the order groups come and go. */
export const ORDER_SCALE = 2520;

/** A group's recency weight 2^((t - reference)/H), its fraction rounded to 12 bits: moving the reference by m steps
 * scales every weight by exactly 2^-m, so old groups are never revisited. */
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
