import { buildNeighbours } from './buildNeighbours.js';
import type { EventLog } from './eventLog.js';
import type { EventLogColumns } from './logColumns.js';
import { nextBestScoring, nextBestSets, postBrowseScoring, postBrowseSets } from './model.js';
import type { ModelOptions } from './model.js';
import type { ItemFacts, Neighbours, PriorStats } from './neighbours.js';

/** The two lists a model keeps. */
export type Kind = 'postBrowse' | 'nextBest';
export const KINDS: readonly Kind[] = ['postBrowse', 'nextBest'];

/** A kind's rebuild, to run in another thread (LiveModel.takeRebuild; buildKind runs it). */
export interface RebuildJob {
  kind: Kind;
  /** Which build of the kind this is (LiveModel.adoptRebuild takes only the latest). */
  build: number;
  log: EventLogColumns;
  facts: ItemFacts;
  options: ModelOptions;
  cutoff: number;
}

/** Builds one kind's lists from `cutoff` on as a full build would; with `frozen`, scored with those prior statistics (see PriorStats). */
export function buildKind(kind: Kind, log: EventLog, options: ModelOptions, cutoff: number, facts: ItemFacts, frozen?: PriorStats): Neighbours {
  return kind === 'postBrowse'
    ? buildNeighbours(log, postBrowseSets(log, options, cutoff), postBrowseScoring(options), facts, frozen)
    : buildNeighbours(log, nextBestSets(log, options, cutoff), nextBestScoring(options), facts, frozen);
}
