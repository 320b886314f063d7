import type { CacheStore, CachedResponse, Lookup, StoreOptions } from '../store/index.js';
import type { Metrics, StoreOperation } from '../observability/index.js';

/**
 * A cache store that times every operation and counts the failed ones, then behaves exactly as the
 * store it wraps: results and rejections pass through unchanged, so the engine's fail-open handling
 * is untouched. Counting here keeps the engine free of metrics about its store.
 */
export class MeasuredStore implements CacheStore {
  constructor(
    private readonly inner: CacheStore,
    private readonly metrics: Metrics,
  ) {}

  /**
   * A lookup the replica-local cache answered is counted there, not timed: it never reached the
   * store, and timing it cost a HIT two clock reads and a histogram observation.
   */
  async lookup(key: string): Promise<Lookup> {
    const started = process.hrtime.bigint();
    let lookup: Lookup;
    try {
      lookup = await this.inner.lookup(key);
    } catch (error) {
      this.metrics.recordStoreError('lookup');
      this.observeSince('lookup', started);
      throw error;
    }
    if (lookup.localCache !== undefined) this.metrics.recordLocalCacheLookup(lookup.localCache);
    if (lookup.localCache !== 'hit') this.observeSince('lookup', started);
    return lookup;
  }

  store(key: string, response: CachedResponse, options: StoreOptions): Promise<boolean> {
    return this.measure('store', () => this.inner.store(key, response, options));
  }

  invalidate(tags: readonly string[]): Promise<number> {
    return this.measure('invalidate', () => this.inner.invalidate(tags));
  }

  invalidateAll(): Promise<number> {
    return this.measure('invalidateAll', () => this.inner.invalidateAll());
  }

  markStale(tags: readonly string[]): Promise<number> {
    return this.measure('markStale', () => this.inner.markStale(tags));
  }

  markAllStale(): Promise<number> {
    return this.measure('markAllStale', () => this.inner.markAllStale());
  }

  ping(): Promise<void> {
    return this.measure('ping', () => this.inner.ping());
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private async measure<T>(operation: StoreOperation, run: () => Promise<T>): Promise<T> {
    const started = process.hrtime.bigint();
    try {
      return await run();
    } catch (error) {
      this.metrics.recordStoreError(operation);
      throw error;
    } finally {
      this.observeSince(operation, started);
    }
  }

  private observeSince(operation: StoreOperation, started: bigint): void {
    this.metrics.observeStoreSeconds(operation, Number(process.hrtime.bigint() - started) / 1e9);
  }
}
