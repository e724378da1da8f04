/** A counter and histogram cheaper than prom-client's, which hash the labels object on every call.
 * Label values must come from bounded sets; prom-client's registry reads these at scrape time. */
import type { Registry } from 'prom-client';
import { promised } from '../shared/promised.js';

interface Sample {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

interface ScrapedMetric {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  values: Sample[];
  aggregator: 'sum';
}

interface Entry<Child> {
  labels: Record<string, string>;
  child: Child;
}

type Level<Child> = Map<string, Level<Child> | Entry<Child>>;

abstract class RequestMetric<Child> {
  private readonly children: Entry<Child>[] = [];
  /** One map level a label: callers pass the same string objects, whose hashes V8 keeps, so nothing is joined. */
  private readonly levels: Level<Child> = new Map();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  protected child(values: readonly string[]): Child {
    let level = this.levels;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      let next = level.get(values[i]!) as Level<Child> | undefined;
      if (next === undefined) {
        next = new Map();
        level.set(values[i]!, next);
      }
      level = next;
    }
    let entry = level.get(values[last]!) as Entry<Child> | undefined;
    if (entry === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => (labels[name] = values[i]!));
      entry = { labels, child: this.make() };
      level.set(values[last]!, entry);
      this.children.push(entry);
    }
    return entry.child;
  }

  protected abstract make(): Child;
  protected abstract samples(labels: Record<string, string>, child: Child): Sample[];
  abstract readonly type: 'counter' | 'histogram';

  get(): Promise<ScrapedMetric> {
    return promised(() => {
      const values: Sample[] = [];
      for (const { labels, child } of this.children) values.push(...this.samples(labels, child));
      return { name: this.name, help: this.help, type: this.type, values, aggregator: 'sum' as const };
    });
  }

  reset(): void {
    this.children.length = 0;
    this.levels.clear();
  }
}

export class RequestCounter extends RequestMetric<{ value: number }> {
  readonly type = 'counter';

  inc(...labelValues: string[]): void {
    this.child(labelValues).value += 1;
  }

  protected make(): { value: number } {
    return { value: 0 };
  }

  protected samples(labels: Record<string, string>, child: { value: number }): Sample[] {
    return [{ labels, value: child.value }];
  }
}

interface HistogramChild {
  /** Observations per bucket (not cumulative); the last is +Inf. */
  counts: Float64Array;
  sum: number;
  count: number;
}

export class RequestHistogram extends RequestMetric<HistogramChild> {
  readonly type = 'histogram';

  constructor(name: string, help: string, labelNames: readonly string[], private readonly buckets: readonly number[], registry: Registry) {
    super(name, help, labelNames, registry);
  }

  observe(value: number, ...labelValues: string[]): void {
    const child = this.child(labelValues);
    let i = 0;
    while (i < this.buckets.length && value > this.buckets[i]!) i++;
    child.counts[i]! += 1;
    child.sum += value;
    child.count += 1;
  }

  protected make(): HistogramChild {
    return { counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 };
  }

  protected samples(labels: Record<string, string>, child: HistogramChild): Sample[] {
    const samples: Sample[] = [];
    let cumulative = 0;
    this.buckets.forEach((bound, i) => {
      cumulative += child.counts[i]!;
      samples.push({ labels: { le: bound, ...labels }, value: cumulative, metricName: `${this.name}_bucket` });
    });
    samples.push({ labels: { le: '+Inf', ...labels }, value: child.count, metricName: `${this.name}_bucket` });
    samples.push({ labels, value: child.sum, metricName: `${this.name}_sum` });
    samples.push({ labels, value: child.count, metricName: `${this.name}_count` });
    return samples;
  }
}
