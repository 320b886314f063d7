import { increment, LATENCY_BUCKETS, latencyBucket, latencyQuantile } from './latencyBuckets.js';
import { hitRatio, type Outcome, type RequestSummary } from './summary.js';

/** One hour of per-second slots: the window the page charts. */
export const TIMELINE_SECONDS = 3600;

const OUTCOME_INDEX: Record<Outcome, number> = { HIT: 0, MISS: 1, PASS: 2, ERROR: 3 };
const OUTCOME_COUNT = 4;
/** Latency histograms are kept for MISS and PASS, the outcomes that reach the origin. */
const LATENCY_SERIES = 2;

export interface TimelineSeries {
  /** Unix seconds of each point, oldest first. */
  time: number[];
  hit: number[];
  miss: number[];
  pass: number[];
  error: number[];
  /** HIT / (HIT + MISS + PASS) in that second; null without such requests. */
  hitRatio: Array<number | null>;
  missP50: Array<number | null>;
  missP99: Array<number | null>;
  passP50: Array<number | null>;
  passP99: Array<number | null>;
}

/**
 * Per-second counts of outcomes and origin latency histograms over the last hour, in typed arrays
 * allocated once: recording a request touches a few array cells, whatever the traffic. A slot is
 * cleared when a new second reuses it.
 */
export class Timeline {
  private readonly second = new Float64Array(TIMELINE_SECONDS).fill(-1);
  private readonly outcomes = new Uint32Array(TIMELINE_SECONDS * OUTCOME_COUNT);
  private readonly latency = new Uint32Array(TIMELINE_SECONDS * LATENCY_SERIES * LATENCY_BUCKETS);

  record(summary: RequestSummary, nowMs: number): void {
    if (summary.outcome === undefined) return;
    const slot = this.slotFor(Math.floor(nowMs / 1000));
    increment(this.outcomes, slot * OUTCOME_COUNT + OUTCOME_INDEX[summary.outcome]);
    const series = summary.outcome === 'MISS' ? 0 : summary.outcome === 'PASS' ? 1 : -1;
    if (series < 0 || summary.originLatencyMs === undefined) return;
    increment(this.latency, (slot * LATENCY_SERIES + series) * LATENCY_BUCKETS + latencyBucket(summary.originLatencyMs));
  }

  /** Totals by outcome over the last `seconds` (at most the hour). */
  totals(nowMs: number, seconds = TIMELINE_SECONDS): Record<Outcome, number> {
    const totals: Record<Outcome, number> = { HIT: 0, MISS: 0, PASS: 0, ERROR: 0 };
    const now = Math.floor(nowMs / 1000);
    for (let second = now - Math.min(seconds, TIMELINE_SECONDS) + 1; second <= now; second += 1) {
      const slot = this.slotIfCurrent(second);
      if (slot < 0) continue;
      totals.HIT += this.outcomes[slot * OUTCOME_COUNT]!;
      totals.MISS += this.outcomes[slot * OUTCOME_COUNT + 1]!;
      totals.PASS += this.outcomes[slot * OUTCOME_COUNT + 2]!;
      totals.ERROR += this.outcomes[slot * OUTCOME_COUNT + 3]!;
    }
    return totals;
  }

  /** Every second of the last `seconds` (empty seconds as zeros), oldest first. */
  series(nowMs: number, seconds = TIMELINE_SECONDS): TimelineSeries {
    const result: TimelineSeries = {
      time: [], hit: [], miss: [], pass: [], error: [], hitRatio: [], missP50: [], missP99: [], passP50: [], passP99: [],
    };
    const now = Math.floor(nowMs / 1000);
    for (let second = now - Math.min(seconds, TIMELINE_SECONDS) + 1; second <= now; second += 1) {
      const slot = this.slotIfCurrent(second);
      const count = (outcome: Outcome): number => (slot < 0 ? 0 : this.outcomes[slot * OUTCOME_COUNT + OUTCOME_INDEX[outcome]]!);
      const quantile = (series: number, q: number): number | null =>
        slot < 0 ? null : (latencyQuantile(this.latency, (slot * LATENCY_SERIES + series) * LATENCY_BUCKETS, q) ?? null);
      result.time.push(second);
      result.hit.push(count('HIT'));
      result.miss.push(count('MISS'));
      result.pass.push(count('PASS'));
      result.error.push(count('ERROR'));
      result.hitRatio.push(hitRatio(count));
      result.missP50.push(quantile(0, 0.5));
      result.missP99.push(quantile(0, 0.99));
      result.passP50.push(quantile(1, 0.5));
      result.passP99.push(quantile(1, 0.99));
    }
    return result;
  }

  private slotFor(second: number): number {
    const slot = second % TIMELINE_SECONDS;
    if (this.second[slot] !== second) {
      this.second[slot] = second;
      this.outcomes.fill(0, slot * OUTCOME_COUNT, (slot + 1) * OUTCOME_COUNT);
      this.latency.fill(0, slot * LATENCY_SERIES * LATENCY_BUCKETS, (slot + 1) * LATENCY_SERIES * LATENCY_BUCKETS);
    }
    return slot;
  }

  private slotIfCurrent(second: number): number {
    const slot = second % TIMELINE_SECONDS;
    return this.second[slot] === second ? slot : -1;
  }
}
