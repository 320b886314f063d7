import type { CachedResponse } from './types.js';

/**
 * A soft purge makes an entry read as one whose max-age ran out a moment ago: its stored time and
 * its expiry in the store both move back by the freshness it had left plus STALE_MARGIN_MS. The
 * margin makes the whole-second `age` of the very next HIT read past max-age, as HTTP caches
 * downstream judge staleness; it is taken from the entry's `swr` window. An entry already that
 * stale is left alone, and one whose expiry moves into the past is removed.
 *
 * The Redis store does the same inside its script (redisScripts.ts, AGE_INDEXED_ENTRIES); both take
 * `now` from the purging replica's clock, as `storedAt` comes from the storing replica's.
 */
export const STALE_MARGIN_MS = 1000;

/** Milliseconds to move `response` (its `storedAt` and its expiry) back; 0 when it is stale enough already. */
export function softPurgeShiftMs(response: Pick<CachedResponse, 'storedAt' | 'maxAge'>, nowMs: number): number {
  return Math.max(0, response.storedAt - (nowMs - response.maxAge * 1000 - STALE_MARGIN_MS));
}
