import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { badUserInput, ErrorCode, forbidden, GatewayError, isGatewayError } from '../errors.js';
import { rerankByEvidence, variantOf, VARIANTS, type Experiment, type Variant } from '../model/experiment.js';
import { listCode, TRACKED_KINDS, TrackingIds, type ListAnchor, type ListCode, type TrackedKind, type TrackedList } from '../model/trackingId.js';
import type { AttributionStore, ListCountSink, ListCountsModel, RateModel, RecommendationStatsModel } from '../ports/attribution.js';
import type { CallOptions, EventKindModel, IngestService, PrincipalModel, RecommendationEntryModel } from '../ports/backend.js';
import { CLICK, HOUR_MS, ListCounter, merged, PURCHASE } from './listCounter.js';

/** The header naming the shopper a request is for: a session or user id, only ever hashed. */
export const SHOPPER_HEADER = 'x-recs-shopper';

const Z95 = 1.959963984540054;

/** x successes in n trials, with the 95% Wilson score interval; null without trials. x is capped at n:
 * a click may name a list served before the counts began. */
export function wilson(x: number, n: number, z = Z95): RateModel | null {
  if (n <= 0) return null;
  const p = Math.min(x, n) / n;
  const z2 = z * z;
  const denominator = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denominator;
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denominator;
  return { value: p, low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

/** A request's side of attribution: its variant, the trackingIds of the lists it serves, and their codes
 * (an impression each), which the response cache keeps with the answer so a cached answer counts too. */
export class RequestTracking {
  readonly impressions: ListCode[] = [];

  constructor(
    private readonly ids: TrackingIds,
    private readonly experiment: Experiment | null,
    /** From X-Recs-Shopper; A without one. */
    readonly variant: Variant,
    private readonly shopperNamed: boolean,
    /** Whose counts recommendationStats reads; null where none is set up. */
    readonly attribution: Attribution | null = null,
  ) {}

  /** Counts an impression of the list and names it. A shopper's list (FOR_YOU) without X-Recs-Shopper
   * takes the variant of the shopper it is for: its arguments are in the response cache's key. */
  serve(kind: TrackedKind, anchor: ListAnchor): { trackingId: string; variant: Variant } {
    const variant = this.shopperNamed || typeof anchor === 'number' ? this.variant : variantOf(this.experiment, anchor.shopper);
    this.impressions.push(listCode(kind, variant));
    return { trackingId: this.ids.make(kind, variant, anchor), variant };
  }

  /** The list's entries in the request's variant's order. */
  rank(entries: RecommendationEntryModel[]): RecommendationEntryModel[] {
    return this.variant === 'B' && this.experiment !== null ? rerankByEvidence(entries, this.experiment.evidencePrior) : entries;
  }
}

let untrackedIds: TrackingIds | null = null;

/** A request's tracking where no Attribution is set up (tests of one stage): A, under a secret of this process. */
export function untracked(): RequestTracking {
  untrackedIds ??= new TrackingIds(randomBytes(32));
  return new RequestTracking(untrackedIds, null, 'A', false);
}

export interface AttributionOptions {
  /** Where counts are kept; null in REST mode, whose impressions go to `sink` (the upstream's counts). */
  store: AttributionStore | null;
  /** Where a REST-mode front sends its impressions (the upstream); default the store. */
  sink?: ListCountSink | null;
  /** RECS_TRACKING_SECRET; default the store's, or, without a store, none: trackingIds are then checked for form only. */
  secret?: string | null;
  experiment?: Experiment | null;
  now?: () => number;
  flushMs?: number;
}

/** Attribution and A/B tests: trackingIds, variants, and counts of lists served and used. */
export class Attribution {
  readonly counter: ListCounter;

  private constructor(
    readonly ids: TrackingIds,
    /** Whether a trackingId's MAC is checked: not by a REST-mode front without the upstream's secret. */
    readonly verifies: boolean,
    readonly experiment: Experiment | null,
    private readonly store: AttributionStore | null,
    private readonly sink: ListCountSink | null,
    private readonly now: () => number,
    flushMs?: number,
  ) {
    this.counter = new ListCounter(sink, now, flushMs);
  }

  static async open(options: AttributionOptions): Promise<Attribution> {
    const { store } = options;
    const secret = options.secret ?? (store !== null ? await store.trackingSecret() : null);
    const ids = new TrackingIds(secret ?? randomBytes(32));
    const sink = options.sink ?? store;
    return new Attribution(ids, secret !== null, options.experiment ?? null, store, sink, options.now ?? Date.now, options.flushMs);
  }

  /** The variant and trackingIds of a request, from its X-Recs-Shopper header. */
  forRequest(headers: IncomingHttpHeaders): RequestTracking {
    const shopper = headers[SHOPPER_HEADER];
    if (typeof shopper !== 'string' || shopper === '' || this.experiment === null) return new RequestTracking(this.ids, this.experiment, 'A', false, this);
    return new RequestTracking(this.ids, this.experiment, variantOf(this.experiment, shopper), true, this);
  }

  /** The lists a call's events name, checked before any is kept: BAD_USER_INPUT names the first bad one. */
  readEvents(events: readonly { trackingId?: string | null }[]): (TrackedList | null)[] | null {
    if (!events.some((e) => e.trackingId != null)) return null;
    return events.map((e, i) => {
      if (e.trackingId == null) return null;
      const read = this.ids.read(e.trackingId);
      // a front without the secret leaves the signature to the upstream, which has it
      const refused = typeof read === 'string' && (this.verifies || read.startsWith('must'));
      if (refused) throw badUserInput(`events[${i}].trackingId: ${read}`, `events[${i}].trackingId`);
      return typeof read === 'string' ? null : read;
    });
  }

  /** Counts a kept call's clicks (VIEWs) and purchases on the lists they name; `kept[i]` false for an event stored before. */
  countEvents(events: readonly { kind: EventKindModel }[], lists: readonly (TrackedList | null)[] | null, kept?: readonly boolean[]): void {
    if (lists === null) return;
    lists.forEach((list, i) => {
      if (list !== null && kept?.[i] !== false) this.counter.count(list.code, events[i]!.kind === 'PURCHASE' ? PURCHASE : CLICK);
    });
  }

  /** Whether this gateway keeps the counts (not in REST mode). */
  get keepsCounts(): boolean {
    return this.store !== null;
  }

  /** The store counts are kept in; UPSTREAM_REJECTED in REST mode, which keeps none. */
  requireStore(): AttributionStore {
    if (this.store !== null) return this.store;
    throw new GatewayError(ErrorCode.UPSTREAM_REJECTED, 'The upstream recommendation service has no recommendation statistics (REST mode): ask the upstream gateway\'s recommendationStats', { service: 'recommendations' });
  }

  /** Adds a front's impressions (POST /v1/stats/impressions) to this gateway's next write, for
   * administrators; a gateway that neither keeps counts nor forwards them has nowhere to put them. */
  takeImpressions(principal: PrincipalModel, read: () => readonly ListCountsModel[]): number {
    if (this.sink === null) this.requireStore();
    if (!principal.user.isAdmin) throw forbidden('Only administrators may send impressions');
    const rows = read();
    this.counter.add(rows);
    return rows.length;
  }

  /** Counts per kind and variant over the UTC hours that overlap [since, until); until defaults to now. */
  async stats(since: number, until: number | null): Promise<RecommendationStatsModel[]> {
    const end = until ?? this.now();
    if (!(end > since)) throw until === null ? badUserInput('since must be before now', 'since') : badUserInput('until must be after since', 'until');
    const store = this.requireStore();
    const sinceHour = Math.floor(since / HOUR_MS);
    const untilHour = Math.ceil(end / HOUR_MS);
    await this.counter.settled();
    const stored = await store.readListCounts(sinceHour, untilHour);
    const unwritten = this.counter.unwritten().filter((row) => row.hour >= sinceHour && row.hour < untilHour);
    const shown: ListCountsModel[] = [];
    for (const kind of TRACKED_KINDS) {
      for (const variant of VARIANTS) {
        if (variant === 'A' || this.experiment !== null) shown.push({ hour: sinceHour, kind, variant, impressions: 0, clicks: 0, purchases: 0 });
      }
    }
    const sums = merged([...shown, ...[...stored, ...unwritten].map((row) => ({ ...row, hour: sinceHour }))]);
    sums.sort((a, b) => TRACKED_KINDS.indexOf(a.kind) - TRACKED_KINDS.indexOf(b.kind) || a.variant.localeCompare(b.variant));
    return sums.map(({ kind, variant, impressions, clicks, purchases }) => ({
      kind, variant, impressions, clicks, purchases,
      clickThroughRate: wilson(clicks, impressions),
      conversionRate: wilson(purchases, impressions),
    }));
  }

  close(): Promise<void> {
    return this.counter.close();
  }
}

/** recommendationStats for a caller, GraphQL and REST alike: this gateway's counts, for administrators;
 * in REST mode, which keeps none nor can tell an administrator, the upstream's twin answers or refuses. */
export function readStats(attribution: Attribution, ingest: IngestService, principal: PrincipalModel, since: number, until: number | null, options: CallOptions = {}): Promise<RecommendationStatsModel[]> {
  if (!attribution.keepsCounts && ingest.recommendationStats) {
    // what this front served is in the answer: its impressions are sent first (kept for the next try on failure)
    return attribution.counter.flush().catch(() => undefined).then(() => ingest.recommendationStats!(principal, since, until, options));
  }
  attribution.requireStore();
  if (!principal.user.isAdmin) throw forbidden('Only administrators may read recommendation statistics');
  return attribution.stats(since, until);
}

/** An upstream's refusal of a trackingId this front could not sign for it: the cause is the front's setting. */
function unsignedRefusal(error: unknown): unknown {
  if (!isGatewayError(error) || error.code !== ErrorCode.BAD_USER_INPUT || !error.field?.endsWith('.trackingId')) return error;
  return badUserInput(`${error.message} (this REST-mode front has no RECS_TRACKING_SECRET: set the upstream's on it, docs/attribution.md)`, error.field);
}

/** The backend's ingestion with trackingIds read before a call is kept (a bad one refuses the call
 * whole, as any bad field does) and counted once it is: the one place for GraphQL and REST alike. */
export function attributedIngest(ingest: IngestService, attribution: Attribution): IngestService {
  const wrapped: IngestService = {
    async recordEvents(principal, events, options) {
      const lists = attribution.readEvents(events);
      const result = await ingest.recordEvents(principal, events, options).catch((error: unknown) => {
        throw attribution.verifies ? error : unsignedRefusal(error);
      });
      attribution.countEvents(events, lists, result.kept);
      return result;
    },
    upsertItems: (principal, items, options) => ingest.upsertItems(principal, items, options),
  };
  if (ingest.knownMayIngest) wrapped.knownMayIngest = (principal) => ingest.knownMayIngest!(principal);
  if (ingest.askMayIngest) wrapped.askMayIngest = (principal, options) => ingest.askMayIngest!(principal, options);
  if (ingest.recommendationStats) wrapped.recommendationStats = (...args) => ingest.recommendationStats!(...args);
  return wrapped;
}
