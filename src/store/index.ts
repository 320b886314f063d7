import type { Config } from '../config/schema.js';
import type { Logger } from '../observability/log.js';
import { MemoryStore } from './memory.js';
import { RedisStore } from './redis.js';
import { hasRedisConnection } from './redis-connection.js';
import type { CacheStore } from './types.js';

export type { CacheStore, CachedResponse, InvalidationMark, Lookup, StoreOptions } from './types.js';

export interface CreateStoreOptions {
  /** Bound of the in-memory store, used when `config` names no Redis. */
  memoryMaxBytes: number;
  logger?: Logger;
}

/** The Redis store when `config` names a server, Cluster or Sentinel; otherwise the in-memory one. */
export function createStore(config: Config['redis'] | undefined, options: CreateStoreOptions): CacheStore {
  if (hasRedisConnection(config)) return new RedisStore(config, { logger: options.logger });
  return new MemoryStore({ maxBytes: options.memoryMaxBytes });
}
