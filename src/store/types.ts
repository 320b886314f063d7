/**
 * What the decision engine needs from wherever cached responses live. The in-memory store serves
 * one replica; the Redis store is shared by every replica, so a purge through one holds for all.
 * The promise that holds across replicas: once a purge or invalidation has resolved, the next
 * lookup on every replica misses what it removed, and no replica ever answers with an entry the
 * store no longer holds in that form (the Redis store's replica-local cache keeps to it, README
 * Redis).
 */

import type { BodyEncoding } from './bodyEncoding.js';

/** A response as svc-cache replays it on a HIT. */
export interface CachedResponse {
  /** Bytes as a client that accepts `encoding` receives them; decompressed, exactly the origin's answer. */
  body: Buffer;
  /** How `body` is compressed (src/store/bodyEncoding.ts); `identity` when it is not. */
  encoding: BodyEncoding;
  /** Length of the body decompressed. */
  identityLength: number;
  contentType: string;
  /** Origin response headers that are safe to replay (never hop-by-hop or per-user ones). */
  headers: Array<[string, string]>;
  /** Epoch milliseconds when the origin's answer was stored; `age` is derived from it. */
  storedAt: number;
  /** Seconds the entry is fresh. */
  maxAge: number;
  /** Seconds past maxAge during which the stale entry may still be served while it is refreshed. */
  swr: number;
  /**
   * Seconds past maxAge during which the stale entry may still answer for an origin that fails
   * (README, Stale-if-error); the rules a request is decided under may shorten it.
   */
  staleIfError: number;
}

/**
 * An opaque point in the store's invalidation history, taken when a lookup misses. A response
 * fetched after the mark is stored only if none of its tags was invalidated since, so an answer
 * the origin gave before a purge is never stored after it.
 */
export interface InvalidationMark {
  readonly value: string;
}

export interface Lookup {
  entry: CachedResponse | undefined;
  mark: InvalidationMark;
  /**
   * Set by a store with a replica-local cache (the Redis store's, README, Redis: the replica-local cache): `hit` when the
   * answer came from it without asking Redis, `miss` when Redis was asked.
   */
  localCache?: 'hit' | 'miss';
}

/** What a store with a replica-local cache reports as it runs, for metrics (src/sidecar). */
export interface LocalCacheObserver {
  /** The local cache started serving (both connections up, reads tracked) or stopped (a connection was lost). */
  localCacheChanged(enabled: boolean): void;
  /** A purge or an invalidation waited this long for every local cache to acknowledge it. */
  acknowledged(seconds: number): void;
}

export interface StoreOptions {
  /** Invalidation tags: entities `Type:key`, types, list types, root fields, operation names, scope buckets. */
  tags: readonly string[];
  /** Lifetime of the entry in the store (maxAge + the longer of swr and staleIfError). */
  ttlSeconds: number;
  /** From the lookup that missed. */
  mark: InvalidationMark;
}

/**
 * An invalidation the store applied, of which not every replica-local cache confirmed dropping the
 * entries within `redis.localCache.ackTimeoutMs` (README, The replica-local cache): applying it again
 * would change nothing for them, so it is reported, not retried.
 */
export class UnconfirmedInvalidation extends Error {
  override readonly name = 'UnconfirmedInvalidation';
}

/**
 * A soft purge the store refused for lack of memory (Redis at `maxmemory` under `noeviction`): its
 * record is written first, which a full Redis refuses, while a hard purge deletes before it writes
 * and is applied (src/purge/handler.ts removes the entries instead).
 */
export class StoreFull extends Error {
  override readonly name = 'StoreFull';
}

export interface CacheStore {
  /**
   * Reads an entry and the current invalidation mark in one round trip. An answer the replica-local
   * cache holds comes back at once, not as a promise: awaiting it would cost a HIT turns of the
   * microtask queue for nothing (docs/performance.md, A GET HIT's own CPU). A failure may throw as well as reject.
   */
  lookup(key: string): Lookup | Promise<Lookup>;
  /**
   * Stores the entry unless one of its tags was invalidated after `mark`; resolves to whether it did.
   * It waits for no replica: one holding an entry this replaces (as fresh, and as much the origin's
   * answer) drops it when the store tells it so.
   */
  store(key: string, response: CachedResponse, options: StoreOptions): Promise<boolean>;
  /**
   * Removes every entry holding any of `tags` and resolves once that is durable for every replica
   * (never before); resolves to the number of entries removed. Rejects when it cannot be applied, or
   * with UnconfirmedInvalidation when it was but a replica did not confirm it.
   */
  invalidate(tags: readonly string[]): Promise<number>;
  /** Removes every entry (`_purgeAll`). */
  invalidateAll(): Promise<number>;
  /**
   * Soft purge: every entry holding any of `tags` turns stale now, as if its max-age had just run
   * out (src/store/softPurge.ts): it is served within its `swr` while one request refreshes it, then
   * it is gone; an entry with no `swr` is removed. The invalidation is recorded as `invalidate`
   * records it, so a response fetched before it is never stored after it. Resolves, once durable for
   * every replica, to the number of entries it made stale or removed.
   */
  markStale(tags: readonly string[]): Promise<number>;
  /** `markStale` for every entry (`_purgeAll(soft: true)`). */
  markAllStale(): Promise<number>;
  /** Resolves when the store answers; used by `/readyz`. */
  ping(): Promise<void>;
  /**
   * Calls `listener` each time a connection to the store is made again (Redis back after a restart
   * or a failover): what failed while it was away may apply now.
   */
  onReconnect(listener: () => void): void;
  close(): Promise<void>;
}
