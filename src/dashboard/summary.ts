/**
 * What the dashboard learns about one request, emitted when its ext_proc stream ends. The shape is
 * shared with the engine's stream layer, which produces it.
 */
export interface RequestSummary {
  /** Undefined: the stream ended undecided. */
  outcome: 'HIT' | 'MISS' | 'PASS' | 'ERROR' | undefined;
  /** A stable code, e.g. 'no-rule'. */
  passReason: PassReason | undefined;
  /** svc-cache's own error code, e.g. 'QUERY_TOO_DEEP'. */
  errorCode: string | undefined;
  /** '' for anonymous; undefined when not GraphQL. */
  operationName: string | undefined;
  /** First 12 hex of sha256(normalised document). */
  documentHash: string | undefined;
  /** Forwarded requests: forward -> response headers. */
  originLatencyMs: number | undefined;
  bytesServedFromCache: number;
}

/** The engine's stable PASS reason codes. */
export type PassReason = string;

export type Outcome = 'HIT' | 'MISS' | 'PASS' | 'ERROR';

export const OUTCOMES: readonly Outcome[] = ['HIT', 'MISS', 'PASS', 'ERROR'];

/**
 * The requests a hit ratio is taken over, on the page, in the API, in Grafana and in README's PromQL
 * (README, Metrics: hit ratio): those bound for the origin, of which HIT is the share the cache
 * answered. ERROR is left out: svc-cache answered those itself, neither cache nor origin could have.
 */
export const HIT_RATIO_OUTCOMES: readonly Outcome[] = ['HIT', 'MISS', 'PASS'];

/** HIT over the requests of HIT_RATIO_OUTCOMES; null when there were none. */
export function hitRatio(count: (outcome: Outcome) => number): number | null {
  const counted = HIT_RATIO_OUTCOMES.reduce((sum, outcome) => sum + count(outcome), 0);
  return counted === 0 ? null : count('HIT') / counted;
}
