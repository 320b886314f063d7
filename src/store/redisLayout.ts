import { createHash } from 'node:crypto';

/**
 * Where things live in Redis. Every key that a script touches together carries the same hash tag,
 * one of a fixed set of virtual shards, so a script never crosses a Cluster slot; an entry's shard
 * comes from hashing its cache key. Invalidation runs on every shard. On a standalone server the
 * layout is the same, so one code path serves both.
 *
 *   {prefix}{shard}:e:{entryId}   string, the encoded response, expires at maxAge + swr
 *   {prefix}{shard}:t:{tag}       sorted set of entry ids holding the tag, scored by entry expiry
 *   {prefix}{shard}:all           sorted set of every entry id of the shard, scored the same way
 *   {prefix}{shard}:i:{tag}       sequence number of the tag's last invalidation, short-lived
 *   {prefix}{shard}:seq           the shard's invalidation sequence (kept forever)
 *   {prefix}{shard}:floor         marks below it are refused, set by invalidateAll (kept forever)
 *   {prefix}{shard}:epoch         names the lifetime of the shard's data; marks from another are refused (kept forever)
 *   {prefix}{shard}:s:{id}        sorted set: the entry ids one soft purge has still to mark stale, short-lived
 *   {prefix}{apq}:q:{sha256}      persisted query text, expires with its registration
 *   {prefix}{apq}:index           sorted set of registered hashes, scored by expiry
 *   {prefix}{apq}:sizes           hash of registered hash to its bytes
 *   {prefix}{apq}:bytes           the registry's total bytes, kept under `apq.maxBytes`
 *
 * Indexes are trimmed lazily: an entry deleted through one tag, or stored again with other tags,
 * stays listed under its old tags until the listing's expiry. Invalidating through such a listing
 * removes whatever entry is at that key now: at worst an extra MISS, never a stale HIT.
 */

export const SHARD_COUNT = 16;

export interface EntryLocation {
  shard: number;
  /** 128 bits of SHA-256 of the cache key: fixed size however long the key, in every index. */
  entryId: string;
}

export class RedisKeyLayout {
  private readonly shardPrefixes: readonly string[];

  constructor(private readonly keyPrefix: string) {
    if (/[{}]/.test(keyPrefix)) {
      throw new Error(`redis.keyPrefix must not contain "{" or "}" (got "${keyPrefix}"): svc-cache places its own Cluster hash tags`);
    }
    this.shardPrefixes = SHARD_HASH_TAGS.map((hashTag) => `${keyPrefix}{${hashTag}}:`);
  }

  locate(cacheKey: string): EntryLocation {
    const digest = createHash('sha256').update(cacheKey).digest();
    return { shard: digest.readUInt8(0) % SHARD_COUNT, entryId: digest.subarray(0, 16).toString('base64url') };
  }

  /** Entry keys are this plus the entry id; scripts that delete entries by id need it. */
  entryKeyPrefix(shard: number): string {
    return `${this.shardPrefix(shard)}e:`;
  }

  entryKey(location: EntryLocation): string {
    return this.entryKeyPrefix(location.shard) + location.entryId;
  }

  tagIndexKey(shard: number, tag: string): string {
    return `${this.shardPrefix(shard)}t:${tag}`;
  }

  allEntriesKey(shard: number): string {
    return `${this.shardPrefix(shard)}all`;
  }

  tagInvalidationKey(shard: number, tag: string): string {
    return `${this.shardPrefix(shard)}i:${tag}`;
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

  /** The entries one soft purge (`id`, unique to it) has still to mark stale on the shard. */
  softPurgeKey(shard: number, id: string): string {
    return `${this.shardPrefix(shard)}s:${id}`;
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
