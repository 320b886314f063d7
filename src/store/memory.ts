import { LRUCache } from 'lru-cache';
import { softPurgeShiftMs } from './softPurge.js';
import type { CacheStore, CachedResponse, InvalidationMark, Lookup, StoreOptions } from './types.js';

export interface MemoryStoreOptions {
  /** Bound on what the store holds, in approximate bytes; the least recently used entries go first. */
  maxBytes: number;
}

/**
 * A store for a single replica. Everything it keeps is bounded: entries by bytes (tag indexes only
 * point at entries still held), invalidation records by count. When an invalidation record is
 * evicted, its sequence number becomes a floor below which every mark is refused, so forgetting a
 * record can only cost a store, never let a stale answer in.
 */
export class MemoryStore implements CacheStore {
  private readonly entries: LRUCache<string, MemoryEntry>;
  private readonly keysByTag = new Map<string, Set<string>>();
  private readonly tagInvalidatedAt: LRUCache<string, number>;
  private invalidationSequence = 0;
  private refuseMarksBelow = 0;

  constructor(options: MemoryStoreOptions) {
    this.entries = new LRUCache<string, MemoryEntry>({
      maxSize: options.maxBytes,
      sizeCalculation: (entry, key) => approximateEntryBytes(key, entry),
      dispose: (entry, key) => this.unindex(key, entry),
    });
    this.tagInvalidatedAt = new LRUCache<string, number>({
      max: MAX_INVALIDATION_RECORDS,
      dispose: (sequence, _tag, reason) => {
        if (reason === 'evict') this.refuseMarksBelow = Math.max(this.refuseMarksBelow, sequence);
      },
    });
  }

  async lookup(key: string): Promise<Lookup> {
    return { entry: this.entries.get(key)?.response, mark: { value: String(this.invalidationSequence) } };
  }

  async store(key: string, response: CachedResponse, options: StoreOptions): Promise<boolean> {
    const ttlMs = Math.ceil(options.ttlSeconds * 1000);
    if (!(ttlMs > 0) || !this.isMarkCurrent(options.mark, options.tags)) return false;
    const tags = [...new Set(options.tags)];
    // The entry it replaces first lets go of its tags, so that a set only it held counts as new again.
    this.entries.delete(key);
    const entry: MemoryEntry = { response, tags, newTagSets: tags.filter((tag) => !this.keysByTag.has(tag)).length };
    this.entries.set(key, entry, { ttl: ttlMs });
    // lru-cache declines (and drops any previous value) when one entry alone exceeds maxBytes.
    if (this.entries.peek(key) !== entry) return false;
    for (const tag of entry.tags) {
      let keys = this.keysByTag.get(tag);
      if (keys === undefined) {
        keys = new Set();
        this.keysByTag.set(tag, keys);
      }
      keys.add(key);
    }
    return true;
  }

  async invalidate(tags: readonly string[]): Promise<number> {
    this.recordInvalidation(tags);
    let removed = 0;
    for (const tag of tags) {
      for (const key of [...(this.keysByTag.get(tag) ?? [])]) {
        if (this.entries.has(key)) removed += 1;
        this.entries.delete(key);
      }
    }
    return removed;
  }

  async invalidateAll(): Promise<number> {
    this.recordInvalidationOfAll();
    this.entries.purgeStale();
    const removed = this.entries.size;
    this.entries.clear();
    return removed;
  }

  async markStale(tags: readonly string[]): Promise<number> {
    this.recordInvalidation(tags);
    const keys = new Set(tags.flatMap((tag) => [...(this.keysByTag.get(tag) ?? [])]));
    return this.ageOut(keys, Date.now());
  }

  async markAllStale(): Promise<number> {
    this.recordInvalidationOfAll();
    return this.ageOut([...this.entries.keys()], Date.now());
  }

  async ping(): Promise<void> {}

  /** Never called: this store lives in the process and has no connection to lose. */
  onReconnect(_listener: () => void): void {}

  async close(): Promise<void> {
    this.entries.clear();
    this.tagInvalidatedAt.clear();
  }

  /** Marks taken before now are refused for `tags`. */
  private recordInvalidation(tags: readonly string[]): void {
    this.invalidationSequence += 1;
    for (const tag of tags) this.tagInvalidatedAt.set(tag, this.invalidationSequence);
  }

  /** Marks taken before now are refused for every tag. */
  private recordInvalidationOfAll(): void {
    this.invalidationSequence += 1;
    this.refuseMarksBelow = this.invalidationSequence;
    this.tagInvalidatedAt.clear();
  }

  /** Moves each entry's stored time and expiry back (softPurge.ts); counts those moved or removed. */
  private ageOut(keys: Iterable<string>, nowMs: number): number {
    let aged = 0;
    for (const key of keys) {
      const entry = this.entries.peek(key);
      const shiftMs = entry === undefined ? 0 : softPurgeShiftMs(entry.response, nowMs);
      if (entry === undefined || shiftMs === 0) continue;
      aged += 1;
      const ttlMs = this.entries.getRemainingTTL(key) - shiftMs;
      if (ttlMs <= 0) {
        this.entries.delete(key);
        continue;
      }
      const response = { ...entry.response, storedAt: entry.response.storedAt - shiftMs };
      // Same key, same tags: the tag index stays as it is.
      this.entries.set(key, { ...entry, response }, { ttl: Math.ceil(ttlMs), noDisposeOnSet: true });
    }
    return aged;
  }

  private isMarkCurrent(mark: InvalidationMark, tags: readonly string[]): boolean {
    const markSequence = Number(mark.value);
    if (!Number.isSafeInteger(markSequence) || markSequence < this.refuseMarksBelow) return false;
    return tags.every((tag) => (this.tagInvalidatedAt.peek(tag) ?? 0) <= markSequence);
  }

  private unindex(key: string, entry: MemoryEntry): void {
    for (const tag of entry.tags) {
      const keys = this.keysByTag.get(tag);
      if (keys === undefined) continue;
      keys.delete(key);
      if (keys.size === 0) this.keysByTag.delete(tag);
    }
  }
}

interface MemoryEntry {
  response: CachedResponse;
  tags: readonly string[];
  /** Tags no entry held when it was stored: the tag index made a set for each, counted with it. */
  newTagSets: number;
}

/** Enough tags for the invalidations of a busy minute; older ones fall back to the floor. */
const MAX_INVALIDATION_RECORDS = 50_000;
/**
 * Rough cost of the objects, maps and set slots around each entry, each of its tags, each set of the
 * tag index and each of its headers, measured with full collections: 20,000 small answers with one
 * tag of their own, four shared and three headers kept 1,360 bytes each where 830 were counted, and
 * with twenty of their own 6,480 where 3,070 were, so the store held up to twice its bound.
 */
const ENTRY_OVERHEAD_BYTES = 512;
const TAG_OVERHEAD_BYTES = 96;
const TAG_SET_OVERHEAD_BYTES = 240;
const HEADER_OVERHEAD_BYTES = 48;

function approximateEntryBytes(key: string, entry: MemoryEntry): number {
  const { response } = entry;
  const headerBytes = response.headers.reduce((sum, [name, value]) => sum + name.length + value.length + HEADER_OVERHEAD_BYTES, 0);
  const tagBytes = entry.tags.reduce((sum, tag) => sum + tag.length + TAG_OVERHEAD_BYTES, 0) + entry.newTagSets * TAG_SET_OVERHEAD_BYTES;
  return ENTRY_OVERHEAD_BYTES + key.length + response.body.length + response.contentType.length + headerBytes + tagBytes;
}
