import type { PersistedQueryRegistry } from '../apq/index.js';
import { withinTimeout } from './redisConnection.js';
import type { RedisKeyLayout } from './redisLayout.js';
import { REGISTER_PERSISTED_QUERY, type RedisClient } from './redisScripts.js';

/**
 * The persisted-query registry shared by every replica, on the Redis connection of the store. Its
 * total size stays under `maxBytes`, the oldest registrations going first (redisLayout.ts has the
 * keys, redisScripts.ts the registration script).
 */
export class RedisPersistedQueryRegistry implements PersistedQueryRegistry {
  constructor(
    private readonly client: RedisClient,
    private readonly layout: RedisKeyLayout,
    private readonly timeoutMs: number,
    private readonly maxBytes: number,
  ) {}

  async get(hash: string): Promise<string | undefined> {
    const query = await withinTimeout(this.client.get(this.layout.persistedQueryKey(hash)), 'persisted query lookup', this.timeoutMs);
    return query ?? undefined;
  }

  async register(hash: string, query: string, ttlSeconds: number): Promise<void> {
    const { index, sizes, bytes, sequence } = this.layout.persistedQueryIndexKeys();
    const keys = [index, sizes, bytes, this.layout.persistedQueryKey(hash), sequence];
    const args = [hash, query, Math.ceil(ttlSeconds * 1000), this.maxBytes, this.layout.persistedQueryKeyPrefix()];
    await withinTimeout(REGISTER_PERSISTED_QUERY.run(this.client, keys, args), 'persisted query registration', this.timeoutMs);
  }
}
