import { QueryTexts, REGISTRATION_OVERHEAD_BYTES, type PersistedQueryRegistry } from '../apq/index.js';
import { withinTimeout } from './redisConnection.js';
import type { RedisKeyLayout } from './redisLayout.js';
import { REGISTER_PERSISTED_QUERY, type RedisClient } from './redisScripts.js';

/**
 * The persisted-query registry shared by every replica, on the Redis connection of the store. Its
 * total size stays under `maxBytes()`, the current configuration's `apq.maxBytes`, the oldest
 * registrations going first: each registration passes the bound in force to the script, which
 * evicts down to it, so a reload applies from the next registration (README, Automatic persisted
 * queries; redisLayout.ts has the keys, redisScripts.ts the registration script).
 *
 * A hash-only HIT would cost two round trips, the registry's and the store's, so a replica keeps
 * what it read from the registry until the registration's own expiry (read with it, in the same
 * round trip): a hash names one text, so a remembered one is never wrong. The memory is bounded
 * like the registry (the bound in force, applied whenever it grows), up to MAX_REMEMBERED_BYTES.
 * What it changes: a registration evicted from Redis early (the size bound) may still be answered
 * by a replica that read it before, until its expiry.
 */
export class RedisPersistedQueryRegistry implements PersistedQueryRegistry {
  private readonly remembered: QueryTexts;

  constructor(
    private readonly client: RedisClient,
    private readonly layout: RedisKeyLayout,
    private readonly timeoutMs: number,
    private readonly maxBytes: () => number,
  ) {
    this.remembered = new QueryTexts(rememberedBound(this.maxBytes()));
  }

  async get(hash: string): Promise<string | undefined> {
    const remembered = this.remembered.get(hash);
    if (remembered !== undefined) return remembered;
    const key = this.layout.persistedQueryKey(hash);
    // Both leave in one socket write (auto-pipelining): one round trip.
    const [query, remainingMs] = await withinTimeout(Promise.all([this.client.get(key), this.client.pttl(key)]), 'persisted query lookup', this.timeoutMs);
    if (query === null) return undefined;
    if (remainingMs > 0) {
      this.remembered.limitTo(rememberedBound(this.maxBytes()));
      this.remembered.set(hash, query, remainingMs);
    }
    return query;
  }

  async register(hash: string, query: string, ttlSeconds: number): Promise<void> {
    const maxBytes = this.maxBytes();
    this.remembered.limitTo(rememberedBound(maxBytes));
    const { index, sizes, bytes, sequence } = this.layout.persistedQueryIndexKeys();
    const keys = [index, sizes, bytes, this.layout.persistedQueryKey(hash), sequence];
    const args = [hash, query, Math.ceil(ttlSeconds * 1000), maxBytes, this.layout.persistedQueryKeyPrefix(), REGISTRATION_OVERHEAD_BYTES];
    await withinTimeout(REGISTER_PERSISTED_QUERY.run(this.client, keys, args), 'persisted query registration', this.timeoutMs);
  }
}

const MAX_REMEMBERED_BYTES = 16 * 1024 * 1024;

function rememberedBound(registryMaxBytes: number): number {
  return Math.max(1, Math.min(registryMaxBytes, MAX_REMEMBERED_BYTES));
}
