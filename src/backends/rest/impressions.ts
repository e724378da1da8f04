import { IMPRESSIONS_PATH, MAX_IMPRESSION_ROWS } from '../../model/trackingId.js';
import type { ListCountSink, ListCountsModel } from '../../ports/attribution.js';
import { upstreamUnavailable } from '../../errors.js';
import type { Upstream } from './upstream.js';

/** A REST-mode front's impressions, sent in the batches its ListCounter makes to an upstream recs-gateway's
 * POST /v1/stats/impressions with the front's own key (an administrator's, holding EVENTS_WRITE), so that the
 * upstream's recommendationStats counts the lists the front served. Clicks and purchases are not sent: the
 * upstream counts them from the events the front forwards. */
export class RestImpressions implements ListCountSink {
  private readonly authorization: string;
  /** Set when the upstream has no such route (not a recs-gateway): nothing is sent again. */
  private absent = false;

  constructor(private readonly upstream: Upstream, apiKey: string) {
    this.authorization = `Bearer ${apiKey}`;
  }

  /** Resolves when the upstream took the batch, or refused it for good (400: sending it again would not
   * help; 404/405: no such route); rejects otherwise, so the counter keeps the counts for its next try. */
  async addListCounts(counts: readonly ListCountsModel[]): Promise<void> {
    if (this.absent) return;
    // the newest hours first, should a long outage have gathered more than one call takes
    const rows = counts.filter((c) => c.impressions > 0).sort((a, b) => b.hour - a.hour).slice(0, MAX_IMPRESSION_ROWS)
      .map(({ kind, variant, hour, impressions }) => ({ kind, variant, hour, impressions }));
    if (rows.length === 0) return;
    const response = await this.upstream.request({
      method: 'POST', path: IMPRESSIONS_PATH, body: JSON.stringify(rows),
      headers: { authorization: this.authorization, 'content-type': 'application/json' },
    });
    if (response.status === 404 || response.status === 405) this.absent = true;
    else if (response.status !== 200 && response.status !== 400) throw upstreamUnavailable('recommendations', `HTTP ${response.status} to POST ${IMPRESSIONS_PATH}`);
  }
}
