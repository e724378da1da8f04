import { ItemIndex } from './interners.js';
import type { RecModel } from './model.js';
import type { Neighbours } from './neighbours.js';

/** A RecModel as plain typed arrays, to cross a thread boundary (the embedded backend's load worker). */
export interface BuiltModel extends Omit<RecModel, 'items'> {
  /** Item ids by dense index. */
  ids: Float64Array;
}

export function toBuiltModel(model: RecModel): BuiltModel {
  const { items, ...rest } = model;
  return { ...rest, ids: items.ids() };
}

export function fromBuiltModel(built: BuiltModel): RecModel {
  const { ids, ...rest } = built;
  return { ...rest, items: ItemIndex.fromIds(ids) };
}

const neighbours = (n: Neighbours): ArrayBufferLike[] => [
  n.start.buffer, n.item.buffer, n.score.buffer, n.evidence.buffer, n.priorStart.buffer, n.priorItem.buffer, n.priorScore.buffer, n.anchorScale.buffer,
  ...(n.priorStats === undefined ? [] : [n.priorStats.occurrences.buffer, n.priorStats.categoryOccurrences.buffer, n.priorStats.partnerStart.buffer, n.priorStats.partner.buffer, n.priorStats.partnerWeight.buffer]),
];

/** One kind's buffers, to transfer rather than copy (a kind rebuilt in a worker). */
export function neighboursTransferList(n: Neighbours): ArrayBuffer[] {
  return [...new Set(neighbours(n))].filter((b): b is ArrayBuffer => b instanceof ArrayBuffer);
}

/** The buffers to transfer rather than copy. */
export function transferList(model: BuiltModel): ArrayBuffer[] {
  const buffers: ArrayBufferLike[] = [
    model.ids.buffer, ...neighbours(model.postBrowse), ...neighbours(model.nextBest), model.views.buffer, model.purchases.buffer,
    model.popularViewed.buffer, model.popularBought.buffer, ...(model.category === null ? [] : [model.category.buffer]),
  ];
  // A buffer listed twice makes postMessage throw; every array here owns its buffer, but be sure.
  return [...new Set(buffers)].filter((b): b is ArrayBuffer => b instanceof ArrayBuffer);
}
