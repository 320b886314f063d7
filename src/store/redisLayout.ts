import { hash } from 'node:crypto';

/**
 * Where things live in Redis. Every key that a script touches together carries the same hash tag,
 * one of a fixed set of virtual shards, so a script never crosses a Cluster slot; an entry's shard
 * comes from hashing its cache key. Invalidation runs on every shard. On a standalone server the
 * layout is the same, so one code path serves both.
 *
 *   {prefix}{shard}:e:{entryId}   string, the encoded response and the key check, expires at maxAge + max(swr, staleIfError)
 *   {prefix}{shard}:ti:{tag}      set of the entry ids holding the tag, expires at most an eighth of its lifetime after its longest-lived entry
 *   {prefix}{shard}:ids           set of every entry id of the shard, the same way
 *   {prefix}{shard}:i:{tag}       sequence number of the tag's last invalidation, short-lived
 *   {prefix}{shard}:seq           the shard's invalidation sequence (kept forever)
 *   {prefix}{shard}:floor         marks below it are refused, set by invalidateAll (kept forever)
 *   {prefix}{shard}:epoch         names the lifetime of the shard's data; marks from another are refused (kept forever)
 *   {prefix}{apq}:q:{sha256}      persisted query text, expires with its registration
 *   {prefix}{apq}:index           sorted set of registered hashes, scored by expiry
 *   {prefix}{apq}:sizes           hash of registered hash to its bytes
 *   {prefix}{apq}:bytes           the registry's total bytes, kept under `apq.maxBytes`
 *
 *   {prefix}{lc}:replicas         sorted set of the replicas whose local cache serves, scored by when their registration ends (Redis's clock, ms)
 *   {prefix}{lc}:since            when the first of them registered since Redis last lost its data (Redis's clock, ms; kept forever)
 *
 * and the local cache's Pub/Sub channels (src/store/redisLocalCache.ts), which hold no data:
 *
 *   {prefix}{lc}:barrier          a purge's barrier, `<replicaId>:<n>`, to every replica's local cache
 *   {prefix}{lc}:ack:{replicaId}  the replicas' acknowledgements of that replica's barrier `<n>`
 *
 * Entry ids are signed 64-bit integers in decimal, so that Redis keeps an index of up to 512 ids
 * (`set-max-intset-entries`) as an intset of 8 bytes per id: what an entry costs in the indexes is
 * about 10 bytes per tag (a sorted set of 22-byte ids cost about 120 once past 128 members). 64 bits
 * can collide where a cache key cannot: the entry's value ends with 8 more bytes of the key's hash
 * (the key check), and a value whose check differs reads as absent. Tags longer than
 * MAX_PLAIN_TAG_BYTES are named by their hash, which bounds the length of every key.
 *
 * Indexes are trimmed lazily: an entry deleted through one tag, expired, or stored again with other
 * tags stays listed until the trim after a store into the index samples it and finds its entry gone
 * (see TRIM_INDEXES), or the index expires. Invalidating through such a listing removes whatever
 * entry is at that key now: at worst an extra MISS, never a stale HIT.
 */

export const SHARD_COUNT = 16;

export interface EntryLocation {
  shard: number;
  /** 64 bits of SHA-256 of the cache key as a signed decimal integer: fixed size however long the key, in every index. */
  entryId: string;
  /** The next 64 bits, stored at the end of the entry's value: together, 128 bits name the key. */
  keyCheck: Buffer;
}

export class RedisKeyLayout {
  private readonly shardPrefixes: readonly string[];
  private readonly epochShards: ReadonlyMap<string, number>;

  constructor(private readonly keyPrefix: string) {
    if (/[{}]/.test(keyPrefix)) {
      throw new Error(`redis.keyPrefix must not contain "{" or "}" (got "${keyPrefix}"): svc-cache places its own Cluster hash tags`);
    }
    this.shardPrefixes = SHARD_HASH_TAGS.map((hashTag) => `${keyPrefix}{${hashTag}}:`);
    this.epochShards = new Map(this.shardPrefixes.map((_, shard) => [this.epochKey(shard), shard]));
  }

  locate(cacheKey: string): EntryLocation {
    // One-shot, as the cache key's own hash (src/engine/cacheKey.ts): every new key is located once.
    const digest = hash('sha256', cacheKey, 'buffer');
    return { shard: digest.readUInt8(0) % SHARD_COUNT, entryId: digest.readBigInt64BE(1).toString(), keyCheck: digest.subarray(9, 9 + KEY_CHECK_BYTES) };
  }

  /** Entry keys are this plus the entry id; scripts that delete entries by id need it. */
  entryKeyPrefix(shard: number): string {
    return `${this.shardPrefix(shard)}e:`;
  }

  entryKey(location: EntryLocation): string {
    return this.entryKeyPrefix(location.shard) + location.entryId;
  }

  tagIndexKey(shard: number, tag: string): string {
    return `${this.shardPrefix(shard)}ti:${tagName(tag)}`;
  }

  allEntriesKey(shard: number): string {
    return `${this.shardPrefix(shard)}ids`;
  }

  tagInvalidationKey(shard: number, tag: string): string {
    return `${this.shardPrefix(shard)}i:${tagName(tag)}`;
  }

  sequenceKey(shard: number): string {
    return `${this.shardPrefix(shard)}seq`;
  }

  floorKey(shard: number): string {
    return `${this.shardPrefix(shard)}floor`;
  }

  /**
   * Names the lifetime of the shard's data: set by the first invalidation after the shard's keys
   * were lost (a restart, a failover without persistence, FLUSHALL), so a mark taken before the loss
   * never matches a sequence counted again from zero after it.
   */
  epochKey(shard: number): string {
    return `${this.shardPrefix(shard)}epoch`;
  }

  /** The shard whose epoch key `key` is, or undefined for any other key. */
  epochShard(key: string): number | undefined {
    return this.epochShards.get(key);
  }

  /** The replicas whose local cache serves, each until its lease ends: a purge waits for each one's acknowledgement. */
  replicasKey(): string {
    return `${this.keyPrefix}{lc}:replicas`;
  }

  /** When the registry of replicas began: younger than a registration, it may miss some (PUBLISH_BARRIER). */
  registrySinceKey(): string {
    return `${this.keyPrefix}{lc}:since`;
  }

  /** Where a purge asks every replica's local cache to confirm it has seen the purge's invalidations. */
  barrierChannel(): string {
    return `${this.keyPrefix}{lc}:barrier`;
  }

  /** Where the replicas answer the barriers of `replicaId`. */
  acknowledgementChannel(replicaId: string): string {
    return `${this.keyPrefix}{lc}:ack:${replicaId}`;
  }

  /** Every persisted-query key shares one hash tag, so the registration script stays in one slot. */
  persistedQueryKey(hash: string): string {
    return `${this.persistedQueryKeyPrefix()}${hash}`;
  }

  persistedQueryKeyPrefix(): string {
    return `${this.keyPrefix}{apq}:q:`;
  }

  persistedQueryIndexKeys(): { index: string; sizes: string; bytes: string; sequence: string } {
    const prefix = `${this.keyPrefix}{apq}:`;
    return { index: `${prefix}index`, sizes: `${prefix}sizes`, bytes: `${prefix}bytes`, sequence: `${prefix}seq` };
  }

  private shardPrefix(shard: number): string {
    const prefix = this.shardPrefixes[shard];
    if (prefix === undefined) throw new RangeError(`no shard ${shard}`);
    return prefix;
  }
}

export const KEY_CHECK_BYTES = 8;

/** Longer tags (entity keys with long ids, long operation names) are named by their hash in keys. */
const MAX_PLAIN_TAG_BYTES = 64;

/** The tag as is, or `#` and 128 bits of its SHA-256 when long (or when it starts with `#`, so no plain tag reads as a hash). */
function tagName(tag: string): string {
  if (Buffer.byteLength(tag) <= MAX_PLAIN_TAG_BYTES && !tag.startsWith('#')) return tag;
  return `#${hash('sha256', tag, 'buffer').subarray(0, 16).toString('base64url')}`;
}

const CLUSTER_SLOTS = 16384;

/**
 * Hash tags chosen so that shard i falls in the i-th sixteenth of the slot space. Masters own
 * contiguous slot ranges, so the shards (and the load) spread evenly over any number of masters up
 * to SHARD_COUNT; names like `p:0` … `p:15` would land ten of sixteen on one master of three.
 */
const SHARD_HASH_TAGS: readonly string[] = Array.from({ length: SHARD_COUNT }, (_, shard) => {
  const firstSlot = Math.floor((shard * CLUSTER_SLOTS) / SHARD_COUNT);
  const endSlot = Math.floor(((shard + 1) * CLUSTER_SLOTS) / SHARD_COUNT);
  for (let candidate = 0; ; candidate += 1) {
    const hashTag = `p${shard}.${candidate}`;
    const slot = clusterSlot(hashTag);
    if (slot >= firstSlot && slot < endSlot) return hashTag;
  }
});

/** Redis Cluster's key slot: CRC16 (XMODEM) of the hash tag, modulo 16384. */
function clusterSlot(hashTag: string): number {
  let crc = 0;
  for (const byte of Buffer.from(hashTag, 'utf8')) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit += 1) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc % CLUSTER_SLOTS;
}
