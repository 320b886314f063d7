import type { Histogram, Registry } from 'prom-client';

/**
 * A Prometheus histogram with one label whose values are all known up front, for a time observed
 * on every ext_proc message. prom-client's Histogram checks, hashes and looks up the label set on
 * each observation: 1.2 µs, 2% of a GET HIT's CPU in a `--cpu-prof` profile (docs/performance.md).
 * Here an observation is an array index and a bucket search. The registry formats it as it formats
 * prom-client's own histograms (the same `get` shape: cumulative `_bucket`s by `le`, `+Inf`, `_sum`,
 * `_count`), and a label value appears once observed, in the order first observed, as there.
 */
export class PhaseHistogram<Value extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly counts: Float64Array[];
  private readonly sums: Float64Array;
  /** Indexes of the label values observed since the last reset, in the order first observed. */
  private readonly observedOrder: number[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelName: string,
    private readonly labelValues: readonly Value[],
    private readonly upperBounds: readonly number[],
  ) {
    // Per value: one count per bound, then the count above the last bound.
    this.counts = labelValues.map(() => new Float64Array(upperBounds.length + 1));
    this.sums = new Float64Array(labelValues.length);
  }

  /** Registers it, as prom-client's `registers` option does; the registry reads metrics through `get`. */
  registerOn(registry: Registry): this {
    registry.registerMetric(this as unknown as Histogram);
    return this;
  }

  observe(value: Value, seconds: number): void {
    const index = this.labelValues.indexOf(value);
    const counts = this.counts[index];
    if (counts === undefined) throw new RangeError(`${this.name}: unknown ${this.labelName} ${value}`);
    if (!Number.isFinite(seconds)) throw new TypeError(`${this.name}: not a finite number: ${seconds}`);
    if (!this.observedOrder.includes(index)) this.observedOrder.push(index);
    let bucket = 0;
    while (bucket < this.upperBounds.length && seconds > this.upperBounds[bucket]!) bucket += 1;
    counts[bucket]! += 1;
    this.sums[index]! += seconds;
  }

  get(): Promise<HistogramData> {
    const values: HistogramValue[] = [];
    for (const index of this.observedOrder) {
      const labelValue = this.labelValues[index]!;
      const counts = this.counts[index]!;
      const total = counts.reduce((sum, count) => sum + count, 0);
      let cumulative = 0;
      this.upperBounds.forEach((bound, bucket) => {
        cumulative += counts[bucket]!;
        values.push({ labels: { le: bound, [this.labelName]: labelValue }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { le: '+Inf', [this.labelName]: labelValue }, value: total, metricName: `${this.name}_bucket` });
      values.push({ labels: { [this.labelName]: labelValue }, value: this.sums[index]!, metricName: `${this.name}_sum` });
      values.push({ labels: { [this.labelName]: labelValue }, value: total, metricName: `${this.name}_count` });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  reset(): void {
    for (const counts of this.counts) counts.fill(0);
    this.sums.fill(0);
    this.observedOrder.length = 0;
  }
}

interface HistogramValue {
  labels: Record<string, string | number>;
  value: number;
  metricName: string;
}

interface HistogramData {
  name: string;
  help: string;
  type: 'histogram';
  values: HistogramValue[];
  aggregator: 'sum';
}
