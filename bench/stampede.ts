import type { DemoOrigin } from '../src/demo/origin.js';
import { startGateway } from '../src/gateway/index.js';
import { HttpPoster } from './httpPoster.js';
import { GRAPHQL_PATH, graphqlRequestBody } from './workload.js';

export interface StampedeFigures {
  concurrentRequests: number;
  originDelayMs: number;
  /** Requests that reached the origin for `concurrentRequests` identical requests arriving together. */
  originRequests: number;
  /** How many answers carried each `svc-cache` value (and each status other than 200). */
  answers: Record<string, number>;
}

/**
 * Identical requests for an entry nobody has cached yet, all at once, through the development
 * gateway (Envoy's part) and the sidecar to a slow origin: without coalescing each one is a MISS
 * of its own and the origin sees them all.
 */
export async function measureStampede(sidecarPort: number, origin: DemoOrigin, concurrentRequests: number): Promise<StampedeFigures> {
  const gateway = await startGateway({ processor: `127.0.0.1:${sidecarPort}`, origin: origin.url, port: 0 });
  const poster = new HttpPoster(`${gateway.url}${GRAPHQL_PATH}`, concurrentRequests);
  const body = graphqlRequestBody(STAMPEDE_QUERY);
  try {
    origin.setBehaviour({ delayMs: ORIGIN_DELAY_MS });
    const before = origin.requestCount();
    const answers = await Promise.all(Array.from({ length: concurrentRequests }, () => poster.post(body)));
    const originRequests = origin.requestCount() - before;
    const counted: Record<string, number> = {};
    for (const answer of answers) {
      const label = answer.status === 200 ? String(answer.headers['svc-cache'] ?? 'none') : `status ${answer.status}`;
      counted[label] = (counted[label] ?? 0) + 1;
    }
    return { concurrentRequests, originDelayMs: ORIGIN_DELAY_MS, originRequests, answers: counted };
  } finally {
    origin.setBehaviour({ delayMs: 0 });
    poster.close();
    await gateway.close();
  }
}

const ORIGIN_DELAY_MS = 200;
/** Asked nowhere else in the run, so the first of them finds the cache empty. */
const STAMPEDE_QUERY = '{ users { id name email } }';
