import type { HeaderList, HttpResponse } from '../http/index.js';
import type { CachedResponse } from '../store/index.js';
import { isEncoded, isGraphQLJson, isStreaming } from './originResponse.js';
import { hitResponse, type Replay } from './responses.js';
import { parseGraphQLResult } from './responseStages.js';

/**
 * stale-if-error (RFC 5861 section 4; README, Stale-if-error): a query whose lookup found an entry
 * past maxAge holds its key, and when the origin then fails the client gets the entry read again
 * (one a purge removed meanwhile is not served) instead of the failure. Envoy shows svc-cache the
 * origin's answer only in the response phase, so the stale entry is sent there as an immediate
 * response, which Envoy sends in place of the origin's response while it still holds that
 * response's headers (docs/ext-proc.md, Immediate responses).
 */

/** Why the origin's answer counts as a failure: a 5xx, or a 200 that is not a GraphQL result. */
export type OriginFailure = 'origin-status' | 'origin-not-graphql';

export const STALE_HEADER = 'svc-cache-stale';

/**
 * Whether an expired entry may answer for a failing origin at `now`: within the shorter of its own
 * staleIfError (the rules' when stored, bounded by the origin's `cache-control`) and that of the
 * rules the request was decided under, past its expiry.
 */
export function withinStaleIfError(entry: CachedResponse, ruleStaleIfError: number, now: number): boolean {
  const seconds = Math.min(entry.staleIfError, ruleStaleIfError);
  return seconds > 0 && now <= entry.storedAt + (entry.maxAge + seconds) * 1000;
}

/**
 * What the origin's response head says: a failure, `read-body` when only the body can tell (a 200
 * of GraphQL JSON), or undefined for an answer that is relayed whatever it holds. Only 5xx count
 * among statuses (RFC 5861 names 500, 502, 503, 504); a 4xx is the origin's answer to this request.
 * A streamed or encoded 200 is an answer svc-cache does not read, so it is relayed.
 */
export function failureByHead(status: number, headers: HeaderList, endOfStream: boolean): OriginFailure | 'read-body' | undefined {
  if (status >= 500 && status <= 599) return 'origin-status';
  if (status !== 200) return undefined;
  if (endOfStream) return 'origin-not-graphql';
  if (isStreaming(headers)) return undefined;
  if (!isGraphQLJson(headers)) return 'origin-not-graphql';
  return isEncoded(headers) ? undefined : 'read-body';
}

/** A GraphQL result is a JSON object with `data` or `errors` (GraphQL spec, Response Format); one with errors is still relayed. */
export function isGraphQLResult(body: Buffer): boolean {
  const result = parseGraphQLResult(body);
  return result !== undefined && ('data' in result || 'errors' in result);
}

/** The entry as the client gets it for a failed origin: a HIT, its true `age`, and `svc-cache-stale: error`. */
export function staleResponse(stale: Replay, now: number): HttpResponse {
  return hitResponse(stale.entry, now, [...stale.overrides, [STALE_HEADER, 'error']], stale.served);
}
