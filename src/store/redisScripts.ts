import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';

/**
 * The Lua scripts of the Redis store. Each touches the keys of one virtual shard only (one Cluster
 * slot), and every key it touches is named in KEYS except entry keys found through an index, which
 * share the shard's hash tag.
 *
 * Times come from the Redis server clock (TIME), never from a replica's, so that index scores and
 * entry expiry agree however far apart the replicas' clocks are.
 */

export type RedisClient = Redis | Cluster;
type ScriptArgument = string | number | Buffer;

/**
 * Connections that track their reads for the replica-local cache in OPTOUT mode
 * (src/store/redisLocalCache.ts). Redis tracks the keys a script reads for the script's caller, so
 * on these each script opts out: otherwise every tag record and index a store or purge reads would
 * be tracked, and each later change to one pushed to the replica for nothing.
 */
const trackingConnections = new WeakSet<RedisClient>();

/** Scripts run on `client` from now on opt out of its read tracking. */
export function runScriptsUntracked(client: RedisClient): void {
  trackingConnections.add(client);
}

export class LuaScript {
  private readonly sha: string;

  constructor(private readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /** EVALSHA, falling back to EVAL once per server that has not seen the script (or was restarted). */
  async run(client: RedisClient, keys: readonly string[], args: readonly ScriptArgument[]): Promise<unknown> {
    try {
      return await this.call(client, 'evalsha', this.sha, keys, args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return this.call(client, 'eval', this.source, keys, args);
    }
  }

  private async call(
    client: RedisClient,
    command: 'evalsha' | 'eval',
    script: string,
    keys: readonly string[],
    args: readonly ScriptArgument[],
  ): Promise<unknown> {
    if (!trackingConnections.has(client)) return client[command](script, keys.length, ...keys, ...args);
    // One pipeline, written at once, so that `CLIENT CACHING NO` applies to this very script (it
    // fails harmlessly while the connection's tracking is off, after a reconnection).
    const replies = await client
      .pipeline()
      .call('CLIENT', 'CACHING', 'NO')
      .call(command, script, keys.length, ...keys, ...args)
      .exec();
    const [error, reply] = replies?.[1] ?? [new Error(`redis ${command}: no reply`), undefined];
    if (error) throw error;
    return reply;
  }
}

/** Redis's own clock in ms, the same for every replica (scripts are replicated by their effects, Redis 5 and newer). */
const REDIS_NOW_MS = `
local function redisNowMs()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
`;

/**
 * Takes up to `budget` entry ids out of the sets KEYS[first..last] and deletes their entries (an id
 * whose entry is gone already costs a DEL that finds nothing). Returns the number of entries deleted
 * and the number of ids still listed.
 */
const DRAIN_INDEXES = `
local function drain(first, last, entryKeyPrefix, budget)
  local removed, remaining = 0, 0
  for i = first, last do
    if budget > 0 then
      local ids = redis.call('SPOP', KEYS[i], budget)
      for _, id in ipairs(ids) do
        removed = removed + redis.call('DEL', entryKeyPrefix .. id)
      end
      budget = budget - #ids
    end
    remaining = remaining + redis.call('SCARD', KEYS[i])
  end
  return { removed, remaining }
end
`;

/**
 * Gives a shard an epoch if it has none: the first invalidation after its keys were lost names a new
 * lifetime, and marks taken in the old one (or before any invalidation) no longer match.
 */
const ENSURE_EPOCH = `
local function ensureEpoch(key)
  if redis.call('EXISTS', key) == 0 then
    local now = redis.call('TIME')
    redis.call('SET', key, now[1] .. '.' .. now[2])
  end
end
`;

/** At most this many ids the trim after a store checks in each index the store joined (TRIM_INDEXES). */
const TRIM_PROBES = 4;
/** An index outlives its longest-lived entry by up to 1/8 of that entry's lifetime, so stores in that time need not extend it. */
const INDEX_TTL_SLACK_DIVISOR = 8;
/** Invalidation records a store reads with one MGET. */
const RECORDS_PER_READ = 500;

/**
 * Records an invalidation of the tags whose records are KEYS[first..last]: the shard's sequence is
 * raised and each record set to it, so marks taken before are refused for those tags.
 */
const RECORD_INVALIDATION = `
local function recordInvalidation(sequenceKey, epochKey, first, last, recordTtlMs)
  ensureEpoch(epochKey)
  local sequence = redis.call('INCR', sequenceKey)
  for i = first, last do
    redis.call('SET', KEYS[i], sequence, 'PX', recordTtlMs)
  end
end
`;

/**
 * Raises a shard's floor, so every mark taken before is refused (invalidateAll, markAllStale).
 */
const RAISE_FLOOR = `
local function raiseFloor(sequenceKey, floorKey, epochKey)
  ensureEpoch(epochKey)
  redis.call('SET', floorKey, redis.call('INCR', sequenceKey))
end
`;

/**
 * Stores an entry unless the mark is stale. KEYS: entry, floor, all-entries index, epoch, then the
 * tags' invalidation records, then the tags' indexes (same order). ARGV: encoded entry, ttl ms,
 * mark sequence, entry id, mark epoch. Returns 1 when stored, 0 when refused.
 *
 * An index's lifetime is extended only when its longest-lived entry would outlive it, and then by
 * an eighth more, so most stores leave it as it is; it expires at most that eighth after its last
 * entry. The indexes the entry joined are trimmed afterwards, by TRIM_INDEXES: a MISS's answer
 * waits for this script, and trimming was half of its time (docs/performance.md, What a MISS adds).
 */
export const STORE_ENTRY = new LuaScript(`${ENSURE_EPOCH}
local tagCount = (#KEYS - 4) / 2
local markSequence = tonumber(ARGV[3])
-- No epoch means the shard's data was lost (or never had one): whatever the mark saw before is
-- unprovable, so refuse this once and start a lifetime that later marks will carry.
local epoch = redis.call('GET', KEYS[4])
if not epoch then
  ensureEpoch(KEYS[4])
  return 0
end
if epoch ~= ARGV[5] then
  return 0
end
if tonumber(redis.call('GET', KEYS[2]) or '0') > markSequence then
  return 0
end
-- One MGET per slice of records: each redis.call costs the script about as much as the command it
-- runs, and unpack() is bounded by Lua's C stack.
for first = 5, 4 + tagCount, ${RECORDS_PER_READ} do
  local records = redis.call('MGET', unpack(KEYS, first, math.min(first + ${RECORDS_PER_READ} - 1, 4 + tagCount)))
  for i = 1, #records do
    if records[i] and tonumber(records[i]) > markSequence then
      return 0
    end
  end
end
local ttlMs = tonumber(ARGV[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttlMs)
local function index(key)
  redis.call('SADD', key, ARGV[4])
  if redis.call('PTTL', key) < ttlMs then
    redis.call('PEXPIRE', key, ttlMs + math.floor(ttlMs / ${INDEX_TTL_SLACK_DIVISOR}))
  end
end
index(KEYS[3])
for i = 5 + tagCount, 4 + 2 * tagCount do
  index(KEYS[i])
end
return 1
`);

/**
 * Trims the indexes KEYS, which a store just joined: in each, random ids are checked one at a time,
 * and removed while their entries are gone, until a live one or TRIM_PROBES of them. ARGV: entry key
 * prefix.
 *
 * An index gains one id per store; when a share d of its ids are dead, a store's trim removes
 * d + d² + d³ + d⁴ of them on average, which reaches that one id at d ≈ 0.52: it stays within about
 * twice its live entries. When nearly all are live (the usual case) this is one SRANDMEMBER and one
 * EXISTS per index. The id the store just added can be drawn too, and ends the sampling as any live
 * one does. An id is removed only while its entry is absent, inside this script, so a store of that
 * entry made before or after it keeps its id listed.
 */
export const TRIM_INDEXES = new LuaScript(`
for i = 1, #KEYS do
  for _ = 1, ${TRIM_PROBES} do
    local id = redis.call('SRANDMEMBER', KEYS[i])
    if not id or redis.call('EXISTS', ARGV[1] .. id) == 1 then
      break
    end
    redis.call('SREM', KEYS[i], id)
  end
end
`);

/**
 * Publishes a purge barrier (src/store/purgeAcknowledgements.ts) and returns how many clients
 * subscribed to its very channel received it, the replicas registered as serving from a local cache
 * whose registration has not run out (REGISTER_LOCAL_CACHE), when the registry began and Redis's
 * time now (src/store/redisLocalCache.ts tells from them whether Redis lost registrations with its
 * data). PUBLISH's own count also takes in every client whose
 * pattern subscription matches (a debugging `redis-cli psubscribe '*'`), which never acknowledges,
 * so each purge would wait out `ackTimeoutMs` and answer 503; counted in the same script, the
 * subscribers counted are those the barrier reached. A replica whose subscriber Redis dropped is
 * no longer among them, but stays registered until its registration runs out, as it may serve
 * until then. KEYS: the replicas' sorted set, the registry's start. ARGV: channel, payload.
 */
export const PUBLISH_BARRIER = new LuaScript(`${REDIS_NOW_MS}
local now = redisNowMs()
local receivers = redis.call('PUBSUB', 'NUMSUB', ARGV[1])[2]
local registered = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')
local since = redis.call('GET', KEYS[2]) or ''
redis.call('PUBLISH', ARGV[1], ARGV[2])
return { receivers, registered, since, now }
`);

/**
 * Registers a replica's local cache as serving until Redis's clock reaches now + ARGV[2] ms, and
 * drops registrations that ran out; the registry's start is set once, by Redis's clock, and kept
 * for as long as Redis keeps its data. The replica serves no longer than its registration: it
 * counts its lease from before it sent this (src/store/redisLocalCache.ts). KEYS: the replicas'
 * sorted set, the registry's start. ARGV: replica id, registration ms. Returns the registry's start.
 */
export const REGISTER_LOCAL_CACHE = new LuaScript(`${REDIS_NOW_MS}
local now = redisNowMs()
local registration = tonumber(ARGV[2])
redis.call('SET', KEYS[2], now, 'NX')
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + registration, ARGV[1])
redis.call('PEXPIRE', KEYS[1], 2 * registration)
return redis.call('GET', KEYS[2])
`);

/**
 * Takes a replica's registration back (its local cache went off). A script, so that it is written
 * at once, in order with the registration that may follow it, never held for auto-pipelining.
 * KEYS: the replicas' sorted set. ARGV: replica id.
 */
export const DEREGISTER_LOCAL_CACHE = new LuaScript(`
return redis.call('ZREM', KEYS[1], ARGV[1])
`);

/**
 * Invalidates tags on one shard. KEYS: sequence, epoch, then the tags' invalidation records, then
 * the tags' indexes (same order). ARGV: entry key prefix, record ttl ms, budget, '1' on the first call
 * (which records the invalidation) or '0' on the calls that only drain what the budget left.
 * Returns { entries deleted, members still listed }.
 *
 * It drains before it records. Over `maxmemory` with `noeviction` Redis refuses a script's write
 * that may use memory (INCR, SET), but only while the script has written nothing yet, and never
 * SPOP or DEL, which free memory: a script that recorded first failed whole on a full Redis,
 * deleting nothing, and every entry it should have removed stayed a HIT until it expired (found by
 * a Redis failure audit). Within one script the order is invisible to other clients.
 */
export const INVALIDATE_TAGS = new LuaScript(`${DRAIN_INDEXES}${ENSURE_EPOCH}${RECORD_INVALIDATION}
local tagCount = (#KEYS - 2) / 2
local drained = drain(3 + tagCount, 2 + 2 * tagCount, ARGV[1], tonumber(ARGV[3]))
if ARGV[4] == '1' then
  recordInvalidation(KEYS[1], KEYS[2], 3, 2 + tagCount, tonumber(ARGV[2]))
end
return drained
`);

/**
 * Invalidates every entry of one shard. KEYS: sequence, floor, all-entries index, epoch. ARGV: entry key
 * prefix, budget, '1' on the first call (which raises the floor) or '0' on draining calls.
 * Returns { entries deleted, members still listed }. It drains first, as INVALIDATE_TAGS does.
 */
export const INVALIDATE_SHARD = new LuaScript(`${DRAIN_INDEXES}${ENSURE_EPOCH}${RAISE_FLOOR}
local drained = drain(3, 3, ARGV[1], tonumber(ARGV[2]))
if ARGV[3] == '1' then
  raiseFloor(KEYS[1], KEYS[2], KEYS[4])
end
return drained
`);

/**
 * Records a soft purge of tags on one shard, as INVALIDATE_TAGS's first call does, deleting
 * nothing. KEYS: sequence, epoch, then the tags' invalidation records. ARGV: record ttl ms.
 */
export const RECORD_TAG_INVALIDATION = new LuaScript(`${ENSURE_EPOCH}${RECORD_INVALIDATION}
recordInvalidation(KEYS[1], KEYS[2], 3, #KEYS, tonumber(ARGV[1]))
return 1
`);

/** Records a soft purge of a whole shard: raises its floor. KEYS: sequence, floor, epoch. */
export const RECORD_SHARD_INVALIDATION = new LuaScript(`${ENSURE_EPOCH}${RAISE_FLOOR}
raiseFloor(KEYS[1], KEYS[2], KEYS[3])
return 1
`);

/**
 * One step of a soft purge (src/store/softPurge.ts): walks the index sets KEYS[position..] with
 * SSCAN from `cursor`, aging the entries listed, until `budget` ids were seen (each SSCAN counts for
 * at least one) or the last index is done. SSCAN returns every member present for the whole walk,
 * so every entry listed when the purge was recorded is aged; one listed after carries a fresh mark,
 * and aging it too is harmless. Aging is idempotent (`now` is the purge's), so an id returned twice,
 * or listed under two tags, is counted once.
 *
 * Aging an entry moves its stored time (the f64 at byte 2 of entryCodec.ts's layout, after the u8
 * format version) and its expiry back by the freshness it had left plus `marginMs`, rewriting only
 * those 8 bytes of the header; one already that stale is left alone, one whose expiry would pass is
 * deleted. `nowMs` is the purging replica's clock, as `storedAt` is a replica's.
 *
 * ARGV: entry key prefix, budget, position (1-based, in KEYS), cursor, now ms, stale margin ms,
 * entry format version. Returns { entries aged or deleted, next position, next cursor }: the walk
 * is done when the position is past #KEYS.
 */
export const AGE_INDEXED_ENTRIES = new LuaScript(`
local function ageOut(entryKey, nowMs, marginMs, formatVersion)
  local header = redis.call('GETRANGE', entryKey, 0, 24)
  -- Formats 2 on agree on these 25 bytes (version, storedAt, maxAge), so an entry a replica of an
  -- earlier version stored is aged too during a rolling upgrade (README, Redis memory).
  if #header < 25 or string.byte(header, 1) < 2 or string.byte(header, 1) > formatVersion then
    return 0
  end
  local storedAt = struct.unpack('>d', header, 2)
  local maxAge = struct.unpack('>d', header, 10)
  local shift = storedAt - (nowMs - maxAge * 1000 - marginMs)
  local ttl = redis.call('PTTL', entryKey)
  if shift <= 0 or ttl < 0 then
    return 0
  end
  local remaining = math.floor(ttl - shift)
  if remaining <= 0 then
    return redis.call('DEL', entryKey)
  end
  redis.call('SETRANGE', entryKey, 1, struct.pack('>d', storedAt - shift))
  redis.call('PEXPIRE', entryKey, remaining)
  return 1
end
local entryKeyPrefix, budget, position, cursor = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local nowMs, marginMs, formatVersion = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local aged = 0
while budget > 0 and position <= #KEYS do
  local reply = redis.call('SSCAN', KEYS[position], cursor, 'COUNT', budget)
  cursor = reply[1]
  for _, id in ipairs(reply[2]) do
    aged = aged + ageOut(entryKeyPrefix .. id, nowMs, marginMs, formatVersion)
  end
  budget = budget - math.max(#reply[2], 1)
  if cursor == '0' then
    position = position + 1
  end
end
return { aged, position, cursor }
`);

/**
 * Registers a persisted query and keeps the registry under its bound. KEYS: index (sorted set of
 * hashes scored by registration order), sizes (hash to bytes), byte count, the query's key, the
 * registration counter. ARGV: hash, query, ttl ms, max bytes, query key prefix, the bytes counted
 * per registration beyond hash and query (REGISTRATION_OVERHEAD_BYTES, src/apq). Members whose query
 * expired are trimmed (a bounded number per call), then the oldest go until the count is within the
 * bound.
 * Returns 1 when registered, 0 when the query alone is over the bound.
 */
export const REGISTER_PERSISTED_QUERY = new LuaScript(`
local index, sizes, bytes, queryKey, sequence = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local hash, query, ttlMs, maxBytes, queryKeyPrefix, overhead = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local function forget(member)
  local size = tonumber(redis.call('HGET', sizes, member) or '0')
  redis.call('HDEL', sizes, member)
  redis.call('ZREM', index, member)
  redis.call('DEL', queryKeyPrefix .. member)
  return tonumber(redis.call('DECRBY', bytes, size))
end
-- The index is in registration order (a counter, never a clock: two registrations in one
-- millisecond must not tie). A query key that expired on its own leaves its member behind: the
-- oldest members are checked, a few per call, and those whose query is gone are forgotten.
for _, member in ipairs(redis.call('ZRANGE', index, 0, 99)) do
  if redis.call('EXISTS', queryKeyPrefix .. member) == 1 then
    break
  end
  forget(member)
end
-- Registered again: counted once, and now the newest.
forget(hash)
-- A registration's own cost in Redis (a key, a sorted-set member, a hash field) counts too.
local size = overhead + #hash + #query
if size > maxBytes then
  return 0
end
redis.call('SET', queryKey, query, 'PX', ttlMs)
redis.call('ZADD', index, redis.call('INCR', sequence), hash)
redis.call('HSET', sizes, hash, size)
local total = tonumber(redis.call('INCRBY', bytes, size))
while total > maxBytes do
  local oldest = redis.call('ZRANGE', index, 0, 0)[1]
  if not oldest then
    break
  end
  total = forget(oldest)
end
return 1
`);
