import { performance } from 'node:perf_hooks';
import { LRUCache } from 'lru-cache';
import { isFresh } from './freshness.js';
import type { CachedResponse, Lookup } from './types.js';

/**
 * Entries read from Redis, kept in this process so that a repeated HIT of a fresh entry costs no
 * round trip (README, Redis: the replica-local cache). It knows no connection:
 * src/store/redisLocalCache.ts enables it only while Redis tracks this replica's reads, and hands
 * it every key Redis says changed. What keeps it exact:
 *
 * - only an entry fresh now (src/store/freshness.ts, the engine's rule) is served; anything else is
 *   read from Redis as it always was (stale-while-revalidate, soft purges, stale-if-error);
 * - a changed key drops its record and marks every read of that key still in flight: Redis may
 *   deliver the invalidation before the reply of a read it invalidates (Redis docs, client-side
 *   caching, "the race"), so a marked read's reply goes to its caller but is never kept;
 * - disabling (a connection lost) and a flush drop everything and mark every read in flight, and a
 *   changed shard epoch does the same for its shard; a read begun while disabled is never kept;
 * - records are served only while the lease runs: the subscriber connection answered recently, so
 *   a connection Redis dropped without this process hearing of it stops serving within the lease.
 */
export class LocalCache {
  private readonly records: LRUCache<string, LocalRecord>;
  /** Reads sent to Redis and not answered yet, by entry key. */
  private readonly reads = new Map<string, ReadNote>();
  private enabled = false;
  /** Raised by every disable and flush: a read begun under another epoch is not kept. */
  private epoch = 0;
  private readonly shardEpochs: number[];
  /** performance.now() until which records may be served. */
  private leaseUntil = 0;

  constructor(maxBytes: number, shardCount: number) {
    this.records = new LRUCache<string, LocalRecord>({ maxSize: maxBytes, sizeCalculation: recordBytes });
    this.shardEpochs = Array.from({ length: shardCount }, () => 0);
  }

  get isEnabled(): boolean {
    return this.enabled;
  }

  /** The lookup a fresh record answers, or undefined: then Redis is asked. */
  get(entryKey: string, keyCheck: Buffer): Lookup | undefined {
    if (!this.enabled || performance.now() > this.leaseUntil) return undefined;
    const record = this.records.get(entryKey);
    if (record === undefined || !record.keyCheck.equals(keyCheck)) return undefined;
    if (isFresh(record.entry, Date.now())) return record.lookup;
    this.records.delete(entryKey);
    return undefined;
  }

  /** Notes a read about to be sent to Redis; undefined while disabled (its reply is never kept). */
  beginRead(entryKey: string, shard: number): PendingRead | undefined {
    if (!this.enabled) return undefined;
    let note = this.reads.get(entryKey);
    if (note === undefined) {
      note = { readers: 0, invalidations: 0 };
      this.reads.set(entryKey, note);
    }
    note.readers += 1;
    return { entryKey, shard, note, invalidations: note.invalidations, epoch: this.epoch, shardEpoch: this.shardEpochs[shard]! };
  }

  /** The read is over; its reply (undefined when it failed) is kept when nothing changed meanwhile and the entry is fresh. */
  endRead(read: PendingRead, keyCheck: Buffer, reply: Lookup | undefined): void {
    read.note.readers -= 1;
    if (read.note.readers === 0) this.reads.delete(read.entryKey);
    const entry = reply?.entry;
    if (entry === undefined || !this.isUnchangedSince(read) || !isFresh(entry, Date.now())) return;
    const own = ownCopy(entry);
    const lookup: Lookup = Object.freeze({ entry: own, mark: reply!.mark, localCache: 'hit' as const });
    this.records.set(read.entryKey, { entry: own, lookup, keyCheck: ownBytes(keyCheck), shard: read.shard });
  }

  /** Redis said `entryKey` changed (or may have). */
  invalidate(entryKey: string): void {
    this.records.delete(entryKey);
    const note = this.reads.get(entryKey);
    if (note !== undefined) note.invalidations += 1;
  }

  /** The shard's epoch changed: its data may have been lost, so nothing read from it is kept. */
  invalidateShard(shard: number): void {
    this.shardEpochs[shard]! += 1;
    const dropped: string[] = [];
    this.records.forEach((record, key) => {
      if (record.shard === shard) dropped.push(key);
    });
    for (const key of dropped) this.records.delete(key);
  }

  /** Everything may have changed (a flush). */
  clear(): void {
    this.epoch += 1;
    this.records.clear();
  }

  enable(): void {
    this.enabled = true;
  }

  disable(): void {
    this.enabled = false;
    this.clear();
  }

  /** Records may be served until `until` (performance.now()), unless a later renewal extends it. */
  renewLease(until: number): void {
    this.leaseUntil = Math.max(this.leaseUntil, until);
  }

  private isUnchangedSince(read: PendingRead): boolean {
    return (
      this.enabled &&
      read.epoch === this.epoch &&
      read.shardEpoch === this.shardEpochs[read.shard] &&
      read.invalidations === read.note.invalidations
    );
  }
}

export interface PendingRead {
  readonly entryKey: string;
  readonly shard: number;
  readonly note: ReadNote;
  /** The note's invalidations, the epoch and the shard's epoch when the read began. */
  readonly invalidations: number;
  readonly epoch: number;
  readonly shardEpoch: number;
}

/** The reads of one key in flight, and how many invalidations of that key arrived since the first began. */
interface ReadNote {
  readers: number;
  invalidations: number;
}

interface LocalRecord {
  entry: CachedResponse;
  /** What a local HIT answers: the entry and the mark of the read that filled it (an older mark only makes store() refuse more). */
  lookup: Lookup;
  keyCheck: Buffer;
  shard: number;
}

/**
 * What a record costs in the heap beyond the bytes counted one by one: its objects, its lookup and
 * mark, its key check, the cache's own bookkeeping, and each header's pair. Measured with records of
 * a 1-byte body: 975 bytes each, and about 100 more a short header, where 256 and nothing a header
 * had been charged (the cache then held 3 to 8 times `maxBytes`).
 */
const RECORD_OVERHEAD_BYTES = 1024;
const HEADER_OVERHEAD_BYTES = 112;

function recordBytes(record: LocalRecord, key: string): number {
  const { entry } = record;
  const headerBytes = entry.headers.reduce((sum, [name, value]) => sum + HEADER_OVERHEAD_BYTES + name.length + value.length, 0);
  // A compressed entry may also hold its identity body for clients without the coding (identityBodyOf).
  const identityBytes = entry.encoding === 'identity' ? 0 : entry.identityLength;
  return RECORD_OVERHEAD_BYTES + key.length + entry.body.length + identityBytes + entry.contentType.length + headerBytes;
}

/**
 * The entry with a body of its own: a reply's bytes are a view of the socket's read buffer, which
 * holds other replies too, and a record keeping that view would keep all of it.
 */
function ownCopy(entry: CachedResponse): CachedResponse {
  return { ...entry, body: ownBytes(entry.body) };
}

/**
 * Bytes in memory of their own. Buffer.from of a small buffer takes a slice of Node's shared 8 KiB
 * pool, and a record keeping that slice keeps the whole pool slab alive, outside the byte bound.
 */
function ownBytes(bytes: Buffer): Buffer {
  const own = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(own);
  return own;
}
