// The recommender's one entry: what the gateway, its tools, benchmarks and tests use. The rest of src/recommender/ is
// its own (test/layers.test.ts holds every other module to this).

// The model: built from the events and the catalogue, and looked up.
export { buildModel, byPopularity, cutoffOf, DEFAULT_NEXT_BEST, DEFAULT_POST_BROWSE, itemFacts, latestTime, maxAgeMsOf } from './model.js';
export type { ModelOptions, RecModel, Scoring } from './model.js';
export type { Neighbours, OrderWeights, PairScore, PriorStats } from './neighbours.js';
export { FILTERED_SCAN_LIMIT, MAX_RECOMMENDATIONS, Picks, Recommender, SCAN_LIMIT } from './recommend.js';
export { anchoredIn, anchorsOf, DEFAULT_FOR_YOU, forYou, forYouFrom, forYouScores, listsOf } from './forYou.js';
export type { AnchoredList, ForYouCandidate, ForYouInputs, ForYouOptions, ForYouPicks, ShopperEvent } from './forYou.js';
export { MAX_SHOPPER_EVENTS, MAX_SHOPPERS, mergeHistories, ShopperHistories } from './shoppers.js';
export { sessionIndex, vsknnScores } from './vsknn.js';
export type { SessionIndex, VsknnOptions } from './vsknn.js';
export { visits } from './sessions.js';
export { inCategory, trendingOf, TrendingScores, TRENDING_BASE_RATE, TRENDING_MIN_EVENTS, TRENDING_WINDOW_DAYS } from './trending.js';
export type { TrendingEntry } from './trending.js';
export type { Sequences } from './sessions.js';
export { DAY_MS } from './weights.js';

// Live updates: events and item records taken in without a rebuild, and rebuilds run elsewhere.
export { LiveModel } from './live.js';
export type { ApplyStats } from './live.js';
export { buildKind, KINDS } from './rebuildJob.js';
export type { Kind, RebuildJob } from './rebuildJob.js';

// What it learns from, as a store holds it: events, the columnar log, the catalogue.
export { EventLog, KIND_PURCHASE, KIND_VIEW } from './eventLog.js';
export type { EventKind, RecEvent } from './eventLog.js';
export { ItemIndex } from './interners.js';
export type { EventLogColumns } from './logColumns.js';
export type { CompactionUnderWay } from './logCompaction.js';
export { Catalog, familyOf, loadCatalogFile } from './catalog.js';
export type { CatalogLoadReport } from './catalog.js';

// Workers: a model or a kind built in another thread, handed over as transferable arrays.
export { fromBuiltModel, neighboursTransferList, toBuiltModel, transferList } from './builtModel.js';
export type { BuiltModel } from './builtModel.js';
export { startModuleWorker } from './threads.js';
