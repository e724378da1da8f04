/** The variants a list may be ranked by: A the shipped ranking, B the experiment's alternative (model/experiment.ts). */
export type Variant = 'A' | 'B';

/** The lists whose serving and use are counted. */
export type TrackedKind = 'POST_BROWSE' | 'NEXT_BEST_PRODUCT' | 'FOR_YOU';

/** A share with its 95% Wilson score interval. */
export interface RateModel {
  value: number;
  low: number;
  high: number;
}

/** recommendationStats' answer for one kind of list and variant. */
export interface RecommendationStatsModel {
  kind: TrackedKind;
  variant: Variant;
  impressions: number;
  clicks: number;
  purchases: number;
  clickThroughRate: RateModel | null;
  conversionRate: RateModel | null;
}

/** Counts of one kind of list and variant over one UTC hour (hour: ms since 1970 / 3,600,000). */
export interface ListCountsModel {
  hour: number;
  kind: TrackedKind;
  variant: Variant;
  impressions: number;
  clicks: number;
  purchases: number;
}

/** Where the counts of lists served and used are kept, shared by the processes over one store. */
export interface AttributionStore {
  /** Adds the counts to the hour rows (made when missing), in one statement or transaction. */
  addListCounts(counts: readonly ListCountsModel[]): Promise<void>;
  /** The sums per kind and variant of the hours from sinceHour up to untilHour (excluded); hour is sinceHour. */
  readListCounts(sinceHour: number, untilHour: number): Promise<ListCountsModel[]>;
  /** The secret trackingIds are signed with: made by the first process, read by the others. */
  trackingSecret(): Promise<string>;
}

/** Where a process's counts go in batches: its store, or in REST mode the upstream recs-gateway's
 * POST /v1/stats/impressions (impressions only: the upstream counts clicks from the forwarded events). */
export type ListCountSink = Pick<AttributionStore, 'addListCounts'>;
