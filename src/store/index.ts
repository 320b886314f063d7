import { MemoryPersistedQueryRegistry, type PersistedQueryRegistry } from '../apq/index.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../observability/index.js';
import { MemoryStore } from './memory.js';
import { RedisStore } from './redis.js';
import { hasRedisConnection } from './redisConnection.js';
import type { CacheStore, LocalCacheObserver } from './types.js';

export type { CacheStore, CachedResponse, InvalidationMark, LocalCacheObserver, Lookup, StoreOptions } from './types.js';
export { StoreFull, UnconfirmedInvalidation } from './types.js';
export { isCommandTimeout } from './redisConnection.js';
export { isFresh } from './freshness.js';
export { compressBody, decompressBody, identityBodyOf, type BodyEncoding, type CompressionSettings } from './bodyEncoding.js';

export interface CreateStoreOptions {
  /** Bound of the in-memory store, used when `config` names no Redis. */
  memoryMaxBytes: number;
  logger?: Logger;
  /** Told of the Redis store's replica-local cache (README, Redis: the replica-local cache). */
  localCacheObserver?: LocalCacheObserver;
}

/** The Redis store when `config` names a server, Cluster or Sentinel; otherwise the in-memory one. */
export function createStore(config: Config['redis'] | undefined, options: CreateStoreOptions): CacheStore {
  if (hasRedisConnection(config)) return new RedisStore(config, { logger: options.logger, localCacheObserver: options.localCacheObserver });
  return new MemoryStore({ maxBytes: options.memoryMaxBytes });
}

export interface Stores {
  cache: CacheStore;
  /** On the same Redis connection as `cache` when there is one. */
  persistedQueries: PersistedQueryRegistry;
}

export interface CreateStoresOptions extends CreateStoreOptions {
  /** The registry's bound in force: the current configuration's `apq.maxBytes`, read at each registration (README, Hot reload). */
  persistedQueryMaxBytes: () => number;
}

/** The cache store (as `createStore`) and the persisted-query registry beside it, bounded to `persistedQueryMaxBytes()`. */
export function createStores(config: Config['redis'] | undefined, options: CreateStoresOptions): Stores {
  const cache = createStore(config, options);
  const persistedQueries =
    cache instanceof RedisStore
      ? cache.persistedQueries(options.persistedQueryMaxBytes)
      : new MemoryPersistedQueryRegistry({ maxBytes: options.persistedQueryMaxBytes });
  return { cache, persistedQueries };
}
