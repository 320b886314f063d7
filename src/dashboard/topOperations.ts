import { increment, LATENCY_BUCKETS, latencyBucket, latencyQuantile } from './latencyBuckets.js';
import { shownName } from './shownNames.js';
import { HIT_RATIO_OUTCOMES, type RequestSummary } from './summary.js';

/** How many operations the sketch tracks (README, Dashboard). */
export const TOP_OPERATIONS = 100;
/** PASS reasons remembered per operation; a further reason replaces none of them. */
const PASS_REASONS_PER_OPERATION = 8;

export interface OperationRow {
  /** At most SHOWN_NAME_CHARACTERS, a longer name cut and marked (shownName). */
  operationName: string;
  documentHash: string;
  /** Requests counted; may overstate by up to `overcount` (space-saving). */
  requests: number;
  overcount: number;
  hitRatio: number | null;
  mainPassReason: string | null;
  originLatencyP50Ms: number | null;
}

interface Counter {
  operationName: string;
  documentHash: string;
  requests: number;
  overcount: number;
  hits: number;
  /** Requests of HIT_RATIO_OUTCOMES, over which `hits` is the hit ratio. */
  countedInRatio: number;
  passReasons: Map<string, number>;
  latency: Uint32Array;
}

/**
 * The most requested operations, by the space-saving algorithm (Metwally et al., 2005): at most
 * `TOP_OPERATIONS` counters; an operation not tracked when the table is full takes over the counter
 * with the fewest requests and inherits its count as a possible overstatement. Any operation with
 * more than 1/K of the traffic is guaranteed to be in the table. Memory is bounded whatever the
 * traffic; a known operation costs a map lookup, a new one a scan of the K counters. Counters are
 * kept per document, whose hash covers the whole operation name, so two long names that share the
 * part shown stay two rows.
 */
export class TopOperations {
  private readonly counters = new Map<string, Counter>();

  constructor(private readonly capacity = TOP_OPERATIONS) {}

  record(summary: RequestSummary): void {
    const { documentHash, operationName } = summary;
    if (documentHash === undefined || operationName === undefined) return;
    const counter = this.counters.get(documentHash) ?? this.admit(documentHash, operationName);
    counter.requests += 1;
    if (summary.outcome === 'HIT') counter.hits += 1;
    if (summary.outcome !== undefined && HIT_RATIO_OUTCOMES.includes(summary.outcome)) counter.countedInRatio += 1;
    if (summary.passReason !== undefined) countPassReason(counter.passReasons, summary.passReason);
    if (summary.originLatencyMs !== undefined) increment(counter.latency, latencyBucket(summary.originLatencyMs));
  }

  /** The tracked operations, most requested first. */
  rows(limit = this.capacity): OperationRow[] {
    return [...this.counters.values()]
      .sort((a, b) => b.requests - a.requests)
      .slice(0, limit)
      .map((counter) => ({
        operationName: counter.operationName,
        documentHash: counter.documentHash,
        requests: counter.requests,
        overcount: counter.overcount,
        hitRatio: counter.countedInRatio === 0 ? null : counter.hits / counter.countedInRatio,
        mainPassReason: mainReason(counter.passReasons),
        originLatencyP50Ms: latencyQuantile(counter.latency, 0, 0.5) ?? null,
      }));
  }

  private admit(documentHash: string, operationName: string): Counter {
    let evicted: Counter | undefined;
    if (this.counters.size >= this.capacity) {
      for (const counter of this.counters.values()) if (!evicted || counter.requests < evicted.requests) evicted = counter;
      this.counters.delete(evicted!.documentHash);
    }
    const counter: Counter = {
      operationName: shownName(operationName),
      documentHash,
      requests: evicted?.requests ?? 0,
      overcount: evicted?.requests ?? 0,
      hits: 0,
      countedInRatio: 0,
      passReasons: new Map(),
      latency: new Uint32Array(LATENCY_BUCKETS),
    };
    this.counters.set(documentHash, counter);
    return counter;
  }
}

function countPassReason(reasons: Map<string, number>, reason: string): void {
  const count = reasons.get(reason);
  if (count !== undefined) reasons.set(reason, count + 1);
  else if (reasons.size < PASS_REASONS_PER_OPERATION) reasons.set(reason, 1);
}

function mainReason(reasons: Map<string, number>): string | null {
  let main: string | null = null;
  let most = 0;
  for (const [reason, count] of reasons) {
    if (count > most) [main, most] = [reason, count];
  }
  return main;
}
