/**
 * What the decision engine needs from wherever cached responses live. The in-memory store serves
 * one replica; the Redis store is shared by every replica, so a purge through one holds for all.
 */

/** A response as svc-cache replays it on a HIT. */
export interface CachedResponse {
  /** Bytes exactly as the client receives them. */
  body: Buffer;
  contentType: string;
  /** Origin response headers that are safe to replay (never hop-by-hop or per-user ones). */
  headers: Array<[string, string]>;
  /** Epoch milliseconds when the origin's answer was stored; `age` is derived from it. */
  storedAt: number;
  /** Seconds the entry is fresh. */
  maxAge: number;
  /** Seconds past maxAge during which the stale entry may still be served while it is refreshed. */
  swr: number;
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
}

export interface StoreOptions {
  /** Invalidation tags: entities `Type:key`, types, list types, root fields, operation names, scope buckets. */
  tags: readonly string[];
  /** Lifetime of the entry in the store (maxAge + swr). */
  ttlSeconds: number;
  /** From the lookup that missed. */
  mark: InvalidationMark;
}

export interface CacheStore {
  /** Reads an entry and the current invalidation mark in one round trip. */
  lookup(key: string): Promise<Lookup>;
  /** Stores the entry unless one of its tags was invalidated after `mark`; resolves to whether it did. */
  store(key: string, response: CachedResponse, options: StoreOptions): Promise<boolean>;
  /**
   * Removes every entry holding any of `tags` and resolves once that is durable for every replica
   * (never before); resolves to the number of entries removed. Rejects when it cannot be applied.
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
  close(): Promise<void>;
}
