import type { CachedResponse } from './types.js';

/**
 * Whether an entry is fresh at `nowMs`: within its max-age since it was stored (inclusive). The
 * engine answers a HIT by this rule, and the Redis store's replica-local cache serves only entries
 * it holds true for, so that the two never disagree on what "fresh" means.
 */
export function isFresh(entry: Pick<CachedResponse, 'storedAt' | 'maxAge'>, nowMs: number): boolean {
  return nowMs - entry.storedAt <= entry.maxAge * 1000;
}
