import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { Cluster, Command, Redis } from 'ioredis';
import { performance } from 'node:perf_hooks';
import { silentLogger, type Logger } from '../observability/index.js';
import { decodeEntry, encodeEntry, FORMAT_VERSION as ENTRY_FORMAT_VERSION } from './entryCodec.js';
import type { PersistedQueryRegistry } from '../apq/index.js';
import { connectRedis, connectSubscriber, isCommandTimeout, isOutOfMemory, localCacheSettings, RedisNotConnected, StalledConnection, stalledAfterMs, withinTimeout, type RedisConfig } from './redisConnection.js';
import { RedisLocalCache } from './redisLocalCache.js';
import { KEY_CHECK_BYTES, RedisKeyLayout, SHARD_COUNT, type EntryLocation } from './redisLayout.js';
import {
  AGE_INDEXED_ENTRIES,
  INVALIDATE_SHARD,
  INVALIDATE_TAGS,
  RECORD_SHARD_INVALIDATION,
  RECORD_TAG_INVALIDATION,
  STORE_ENTRY,
  TRIM_INDEXES,
  type LuaScript,
  type RedisClient,
} from './redisScripts.js';
import { STALE_MARGIN_MS } from './softPurge.js';
import { errorMessage } from '../util/index.js';
import { RedisPersistedQueryRegistry } from './redisPersistedQueries.js';
import { StoreFull, UnconfirmedInvalidation, type CacheStore, type CachedResponse, type InvalidationMark, type LocalCacheObserver, type Lookup, type StoreOptions } from './types.js';

export interface RedisStoreOptions {
  logger?: Logger;
  /** Told when the replica-local cache turns on or off and how long purges wait for it. */
  localCacheObserver?: LocalCacheObserver;
}

/**
 * The store shared by every replica (data model in redisLayout.ts). A HIT is one MGET of the entry
 * and its shard's invalidation sequence and epoch. Every call is bounded by `commandTimeoutMs` and fails at
 * once while Redis is unreachable, so the engine answers PASS instead of waiting.
 *
 * Race guard: the mark a lookup returns holds the shard's invalidation sequence. Invalidating a tag
 * raises the sequence and records it against the tag for MARK_LIFETIME_MS (plus a margin); `store`
 * refuses, inside its script, when a tag's record is newer than the mark. A mark belongs to the
 * key whose lookup returned it (sequences are per shard), and one older than its lifetime is
 * refused without asking, since the records it would need may be gone. A mark also holds the
 * shard's epoch: when Redis loses its data the sequence counts again from zero, and a mark from the
 * lost lifetime must not pass for a current one.
 *
 * Local cache (redis.localCache, on by default but with a Cluster): a fresh entry read before is
 * answered from this process without a round trip (src/store/redisLocalCache.ts), and every purge
 * resolves only once every replica's local cache acknowledged it.
 */
export class RedisStore implements CacheStore {
  private readonly client: RedisClient;
  private readonly layout: RedisKeyLayout;
  private readonly timeoutMs: number;
  private readonly localCache: RedisLocalCache | undefined;
  private readonly logger: Logger;
  /** Why the connection last failed, until it is ready again: /readyz says it (ping). */
  private connectionError: string | undefined;
  private readonly stall: StalledConnection;

  constructor(config: RedisConfig, options: RedisStoreOptions = {}) {
    this.layout = new RedisKeyLayout(config.keyPrefix);
    this.timeoutMs = config.commandTimeoutMs;
    const logger = options.logger ?? silentLogger();
    this.logger = logger;
    const localCache = localCacheSettings(config);
    this.client = connectRedis(config, logger);
    this.localCache =
      localCache === undefined || !(this.client instanceof Redis)
        ? undefined
        : new RedisLocalCache(
            this.client,
            (name) => connectSubscriber(config, logger, name),
            this.layout,
            localCache,
            logger,
            options.localCacheObserver,
          );
    // Every (re)connection may find a Redis that lost its data: give each shard an epoch at once,
    // so stores are refused only in the moment before it, not until the first invalidation.
    this.client.on('ready', () => {
      this.connections += 1;
      this.epochs = this.startEpochs();
      this.connectionError = undefined;
      void this.checkEvictionPolicy();
      for (const listener of this.reconnectListeners) listener();
    });
    // A Cluster stays ready while one node's connection ends (that node restarted, or died and its
    // replica took over) and another is added: each counts, at once, before a command can reach the
    // node that is new or back (commands wait in the node's own queue until it is ready).
    if (this.client instanceof Cluster) {
      const anotherConnection = (): void => {
        this.connections += 1;
      };
      this.client.on('-node', anotherConnection).on('+node', () => {
        anotherConnection();
        for (const listener of this.reconnectListeners) listener();
      });
    }
    this.client.on('error', (error: Error) => {
      this.connectionError = errorMessage(error);
    });
    const stalledAfter = stalledAfterMs(config.commandTimeoutMs);
    this.stall = new StalledConnection(stalledAfter, () => {
      logger.warn({ afterMs: stalledAfter }, 'redis stopped answering; reconnecting');
      this.client.disconnect(true);
    });
  }

  private epochs: Promise<void> = Promise.resolve();
  /**
   * Connections made (and, with a Cluster, nodes' connections ended) so far; a mark holds the count
   * at its lookup's reply, and a store refuses a mark from an earlier connection. A Redis restarted
   * from a snapshot (or a replica it failed over to) comes back with the shards' epochs and lower
   * sequences: invalidations after it record sequences a mark from before may exceed, and its store
   * passed them, putting the answer an in-flight MISS fetched before a mutation or purge back as a
   * HIT (found by a Redis failure audit). A restart, or a failover that takes the old server away,
   * ends the connection first; a coordinated failover (CLUSTER FAILOVER without FORCE) may not, and
   * loses no writes.
   */
  private connections = 0;
  private readonly reconnectListeners: Array<() => void> = [];

  /**
   * Where recent keys live, for lookups and stores. Hashing the key on every lookup was 2-3% of a
   * local HIT's CPU; a key's location never changes, so the last LOCATIONS_REMEMBERED keys' are
   * kept (forgotten all at once when full: cache keys are a bucket and a digest, so that is a few
   * MB at most).
   */
  private located(key: string): { location: EntryLocation; entryKey: string } {
    let located = this.locations.get(key);
    if (located === undefined) {
      if (this.locations.size >= LOCATIONS_REMEMBERED) this.locations.clear();
      const location = this.layout.locate(key);
      located = { location, entryKey: this.layout.entryKey(location) };
      this.locations.set(key, located);
    }
    return located;
  }

  private readonly locations = new Map<string, { location: EntryLocation; entryKey: string }>();

  /**
   * Says, at error, when Redis may evict svc-cache's keys: an evicted tag index or invalidation
   * record lets a purge answered `true`, or a mutation, leave entries that are then served (found
   * by a Redis failure audit: under allkeys-lru a purge answered `true` and the entry stayed a HIT).
   * A Redis that does not answer CONFIG (managed services rename it) is taken on trust. Nothing
   * is refused: the setting can change at any time, and the README says what is required.
   */
  private async checkEvictionPolicy(): Promise<void> {
    const policy = await this.withinTimeout(evictionPolicyOf(this.client), 'config').catch(() => undefined);
    if (policy === undefined || policy === 'noeviction') return;
    this.logger.error(
      { maxmemoryPolicy: policy },
      'Redis may evict svc-cache\'s keys (maxmemory-policy is not noeviction): an evicted tag index lets a purge or a mutation leave the entries it names, which are then served; set maxmemory-policy noeviction, and once keys were evicted delete those under redis.keyPrefix (no purge reaches an entry whose indexes are gone)',
    );
  }

  private async startEpochs(): Promise<void> {
    const epoch = `${Date.now()}.${randomUUID()}`;
    await Promise.all(
      Array.from({ length: SHARD_COUNT }, (_, shard) => this.client.set(this.layout.epochKey(shard), epoch, 'NX')),
    ).catch(() => undefined);
  }

  lookup(key: string): Lookup | Promise<Lookup> {
    const { location, entryKey } = this.located(key);
    if (this.localCache === undefined) return this.read(location, entryKey);
    return this.localCache.lookup(entryKey, location, () => this.read(location, entryKey));
  }

  async store(key: string, response: CachedResponse, options: StoreOptions): Promise<boolean> {
    const { location, entryKey } = this.located(key);
    const mark = decodeMark(options.mark);
    const ttlMs = Math.ceil(options.ttlSeconds * 1000);
    if (
      !(ttlMs > 0) ||
      mark === undefined ||
      mark.shard !== location.shard ||
      mark.connection !== this.connections ||
      performance.now() - mark.takenAt > MARK_LIFETIME_MS
    ) {
      return false;
    }
    const { shard } = location;
    const tags = [...new Set(options.tags)];
    const allEntries = this.layout.allEntriesKey(shard);
    const { records, indexes } = this.recordsAndIndexes(shard, tags);
    const keys = [entryKey, this.layout.floorKey(shard), allEntries, this.layout.epochKey(shard), ...records, ...indexes];
    let stored: unknown;
    try {
      stored = await this.withinTimeout(
        STORE_ENTRY.run(this.client, keys, [
          Buffer.concat([encodeEntry(response), location.keyCheck]),
          ttlMs,
          mark.sequence,
          location.entryId,
          mark.epoch,
        ]),
        'store',
      );
    } finally {
      // This replica's own next lookup reads what it just stored, without waiting for Redis's
      // invalidation push, which may come later (a contract test caught the replaced entry served).
      this.localCache?.forget(entryKey);
    }
    // Over an entry still fresh, other replicas' local caches holding the old one drop it when
    // Redis's invalidation reaches them, and a MISS does not wait for that: both answers are the
    // origin's to this request and fresh, so serving the replaced one a moment longer is no stale
    // answer, while waiting on every replica would turn a slow one into a PASS here.
    if (stored !== 1) return false;
    // Once the answer is on its way: the engine hands it to grpc-js in this turn of the event loop
    // (storeResponse, then the ext_proc stream's call.write), HTTP/2 writes it to the socket from a
    // native immediate, and Node runs those before setImmediate callbacks. Under backpressure the
    // trim may leave first; the answer never waits for it.
    setImmediate(() => this.trimIndexes(shard, [allEntries, ...indexes]));
    return true;
  }

  async invalidate(tags: readonly string[]): Promise<number> {
    const uniqueTags = [...new Set(tags)];
    if (uniqueTags.length === 0) return 0;
    // A slice's tags are recorded in the same script call as its first entries are drained (after
    // them: INVALIDATE_TAGS), so none can be refreshed from an answer fetched before; the count
    // stays exact, as an entry already deleted counts no more.
    return this.onEveryShard(async (shard) => {
      let removed = 0;
      for (const slice of slices(uniqueTags, KEYS_PER_CALL)) {
        const { records, indexes } = this.recordsAndIndexes(shard, slice);
        removed += await this.drainShard(
          INVALIDATE_TAGS,
          [this.layout.sequenceKey(shard), this.layout.epochKey(shard), ...records, ...indexes],
          (firstCall) => [this.layout.entryKeyPrefix(shard), INVALIDATION_RECORD_TTL_MS, DRAIN_BUDGET, firstCall ? '1' : '0'],
        );
      }
      return removed;
    });
  }

  async invalidateAll(): Promise<number> {
    return this.onEveryShard((shard) =>
      this.drainShard(
        INVALIDATE_SHARD,
        [
          this.layout.sequenceKey(shard),
          this.layout.floorKey(shard),
          this.layout.allEntriesKey(shard),
          this.layout.epochKey(shard),
        ],
        (firstCall) => [this.layout.entryKeyPrefix(shard), DRAIN_BUDGET, firstCall ? '1' : '0'],
      ),
    );
  }

  /** Rejects with StoreFull on a full Redis (`noeviction`), which refuses the record written first. */
  async markStale(tags: readonly string[]): Promise<number> {
    return refusedWhenFull(this.ageEntries(tags));
  }

  async markAllStale(): Promise<number> {
    return refusedWhenFull(this.ageAllEntries());
  }

  private async ageEntries(tags: readonly string[]): Promise<number> {
    const uniqueTags = [...new Set(tags)];
    if (uniqueTags.length === 0) return 0;
    const nowMs = Date.now();
    return this.onEveryShard(async (shard) => {
      for (const slice of slices(uniqueTags, KEYS_PER_CALL)) {
        const keys = [this.layout.sequenceKey(shard), this.layout.epochKey(shard), ...slice.map((tag) => this.layout.tagInvalidationKey(shard, tag))];
        await this.withinTimeout(RECORD_TAG_INVALIDATION.run(this.client, keys, [INVALIDATION_RECORD_TTL_MS]), 'invalidation');
      }
      return this.ageIndexedEntries(shard, uniqueTags.map((tag) => this.layout.tagIndexKey(shard, tag)), nowMs);
    });
  }

  private async ageAllEntries(): Promise<number> {
    const nowMs = Date.now();
    return this.onEveryShard(async (shard) => {
      const keys = [this.layout.sequenceKey(shard), this.layout.floorKey(shard), this.layout.epochKey(shard)];
      await this.withinTimeout(RECORD_SHARD_INVALIDATION.run(this.client, keys, []), 'invalidation');
      return this.ageIndexedEntries(shard, [this.layout.allEntriesKey(shard)], nowMs);
    });
  }

  /** The persisted-query registry on this store's connection, bounded to what `maxBytes` says at each registration. */
  persistedQueries(maxBytes: () => number): PersistedQueryRegistry {
    return new RedisPersistedQueryRegistry(this.client, this.layout, this.timeoutMs, maxBytes);
  }

  /** Waits up to `commandTimeoutMs` for a connection that is still being made, then pings. */
  async ping(): Promise<void> {
    if (this.client.status !== 'ready') {
      await once(this.client, 'ready', { signal: AbortSignal.timeout(this.timeoutMs) }).catch((error: unknown) => {
        throw this.notConnected(error);
      });
    }
    await this.withinTimeout(this.client.ping(), 'ping');
    await this.epochs;
  }

  /** Called at each connection made (a Cluster's: at each node added, before it is ready). */
  onReconnect(listener: () => void): void {
    this.reconnectListeners.push(listener);
  }

  async close(): Promise<void> {
    await this.localCache?.close();
    try {
      await this.withinTimeout(this.client.quit(), 'close');
    } catch {
      // Unreachable or slow: nothing left to flush, so dropping the connection loses nothing.
    } finally {
      this.client.disconnect();
    }
  }

  /** One MGET: the entry, its shard's sequence and epoch (the mark). */
  private async read(location: EntryLocation, entryKey: string): Promise<Lookup> {
    const [entryBytes, sequence, epoch] = await this.withinTimeout(
      this.mget([entryKey, this.layout.sequenceKey(location.shard), this.layout.epochKey(location.shard)]),
      'lookup',
    );
    return {
      entry: entryBytes ? decodeCheckedEntry(entryBytes, location.keyCheck) : undefined,
      mark: encodeMark({
        shard: location.shard,
        sequence: Number(sequence ?? 0),
        takenAt: performance.now(),
        // Read at the reply: a lookup resent on a new connection was answered by the new server.
        connection: this.connections,
        epoch: epoch?.toString() ?? '',
      }),
    };
  }

  /**
   * An MGET of Buffers, written at once while no other lookup waits on Redis: auto-pipelining would
   * hold it for the next turn of the event loop, about 40 µs of a MISS at concurrency 1 (README,
   * Performance, What a MISS adds). Lookups made while one waits are auto-pipelined, so that under
   * load they still leave together, in one socket write (src/store/redisConnection.ts). A Cluster's
   * lookups are all auto-pipelined, each batch to its node.
   *
   * A lookup written at once may overtake auto-pipelined commands of the same turn, such as the
   * epochs set on a new connection: its mark then carries no epoch and its store is refused, once.
   */
  private mget(keys: string[]): Promise<Array<Buffer | null>> {
    if (!(this.client instanceof Redis)) return this.client.mgetBuffer(...keys);
    const reply =
      this.lookupsWaiting === 0
        ? writeAtOnce(this.client, new Command('mget', keys, { replyEncoding: null, keyPrefix: this.client.options.keyPrefix }))
        : this.client.mgetBuffer(...keys);
    this.lookupsWaiting += 1;
    return reply.finally(() => {
      this.lookupsWaiting -= 1;
    });
  }

  private lookupsWaiting = 0;

  /**
   * Runs `invalidateShard` on every shard at once; resolves to the total removed once every local
   * cache acknowledged it (the barrier), rejects if any shard failed or the barrier did.
   */
  private async onEveryShard(invalidateShard: (shard: number) => Promise<number>): Promise<number> {
    const removed = await Promise.all(Array.from({ length: SHARD_COUNT }, (_, shard) => invalidateShard(shard)));
    try {
      await this.localCache?.barrier();
    } catch (error) {
      throw new UnconfirmedInvalidation(`applied in Redis, but not confirmed by every replica-local cache: ${errorMessage(error)}`, { cause: error });
    }
    return removed.reduce((sum, count) => sum + count, 0);
  }

  /**
   * The first call records the invalidation and deletes up to DRAIN_BUDGET entries; further calls
   * delete the rest, so no single script holds Redis for long. Entries still listed after the
   * first call cannot be refreshed meanwhile (the record refuses them), and the caller hears of
   * success only once all are gone.
   */
  private async drainShard(
    script: LuaScript,
    keys: readonly string[],
    argumentsFor: (firstCall: boolean) => ReadonlyArray<string | number>,
  ): Promise<number> {
    let removed = 0;
    for (let firstCall = true; ; firstCall = false) {
      const reply = await this.withinTimeout(script.run(this.client, keys, argumentsFor(firstCall)), 'invalidation');
      const [deleted, remaining] = parseDrainReply(reply);
      removed += deleted;
      if (remaining === 0) return removed;
    }
  }

  /**
   * Trims the indexes a store joined (TRIM_INDEXES). A trim that fails leaves ids of gone entries
   * listed for a later store's trim, and at worst an extra MISS (redisLayout.ts): it is logged, not
   * retried.
   */
  private trimIndexes(shard: number, indexes: string[]): void {
    this.withinTimeout(TRIM_INDEXES.run(this.client, indexes, [this.layout.entryKeyPrefix(shard)]), 'trim').catch((error: unknown) => {
      this.logger.debug({ err: error, shard }, 'redis index trim failed');
    });
  }

  /** The tags' invalidation records and their indexes, in the tags' order (KEYS of the tag scripts, records first). */
  private recordsAndIndexes(shard: number, tags: readonly string[]): { records: string[]; indexes: string[] } {
    return {
      records: tags.map((tag) => this.layout.tagInvalidationKey(shard, tag)),
      indexes: tags.map((tag) => this.layout.tagIndexKey(shard, tag)),
    };
  }

  /**
   * Ages the entries listed in a shard's `indexes` (src/store/softPurge.ts), once the purge is
   * recorded: AGE_INDEXED_ENTRIES walks them with SSCAN, at most KEYS_PER_CALL indexes and about
   * DRAIN_BUDGET ids per call, the walk's place kept here between calls, so that however many tags
   * or entries a purge names no single script holds Redis for long (as drainShard). Every replica
   * sees an entry stale once its call ran; the caller hears of success only once all did.
   */
  private async ageIndexedEntries(shard: number, indexes: readonly string[], nowMs: number): Promise<number> {
    let aged = 0;
    for (const slice of slices(indexes, KEYS_PER_CALL)) {
      for (let position = 1, cursor = '0'; position <= slice.length; ) {
        const reply = await this.withinTimeout(
          AGE_INDEXED_ENTRIES.run(this.client, slice, [
            this.layout.entryKeyPrefix(shard),
            DRAIN_BUDGET,
            position,
            cursor,
            nowMs,
            STALE_MARGIN_MS,
            ENTRY_FORMAT_VERSION,
          ]),
          'invalidation',
        );
        const step = parseAgeReply(reply);
        aged += step.aged;
        ({ position, cursor } = step);
      }
    }
    return aged;
  }

  private withinTimeout<T>(operation: Promise<T>, what: string): Promise<T> {
    return withinTimeout(operation, what, this.timeoutMs).then(
      (value) => {
        this.stall.settled(false);
        return value;
      },
      (error: unknown) => {
        this.stall.settled(isCommandTimeout(error));
        throw error instanceof RedisNotConnected ? this.notConnected(error) : error;
      },
    );
  }

  /** What the logs say of a store operation while no connection is ready, with why the last one ended. */
  private notConnected(cause: unknown): Error {
    return new Error(this.connectionError === undefined ? 'redis is not connected' : `redis is not connected: ${this.connectionError}`, { cause });
  }
}

async function refusedWhenFull(aging: Promise<number>): Promise<number> {
  try {
    return await aging;
  } catch (error) {
    throw isOutOfMemory(error) ? new StoreFull(errorMessage(error), { cause: error }) : error;
  }
}

/**
 * How long a MISS may spend at the origin and still be stored. Longer fetches are not stored: the
 * invalidation records that would prove them current are kept only this long.
 */
const MARK_LIFETIME_MS = 60_000;
/** Past the mark lifetime by enough to absorb network delay and clock rate differences. */
const INVALIDATION_RECORD_TTL_MS = MARK_LIFETIME_MS + 10_000;
/** Entries one invalidation script deletes (or ages) before handing Redis back to other clients. */
const DRAIN_BUDGET = 1000;
/**
 * Tags one invalidation script records, drains or walks, so that the call stays short however many a
 * purge names. Every shard runs its calls at the same time (onEveryShard), and each call's
 * `commandTimeoutMs` counts its wait behind the other shards' calls: 1,000 tags in flight in all,
 * not per call, keep that wait short (a purge of 3,000 tags in calls of 1,000 timed out at 250 ms).
 */
const KEYS_PER_CALL = Math.ceil(1000 / SHARD_COUNT);

/** `maxmemory-policy`, from one node of a Cluster (they are configured alike). */
async function evictionPolicyOf(client: RedisClient): Promise<string | undefined> {
  const node = client instanceof Cluster ? client.nodes('master')[0] : client;
  const reply = (await node?.config('GET', 'maxmemory-policy')) as unknown;
  return Array.isArray(reply) && typeof reply[1] === 'string' ? reply[1] : undefined;
}

interface DecodedMark {
  shard: number;
  sequence: number;
  /** performance.now() of the lookup: marks never leave the process that took them. */
  takenAt: number;
  /** RedisStore.connections at the lookup's reply. */
  connection: number;
  /** The shard's epoch at the lookup ('' before its first invalidation). */
  epoch: string;
}

function encodeMark(mark: DecodedMark): InvalidationMark {
  return { value: `${mark.shard}:${mark.sequence}:${mark.takenAt}:${mark.connection}:${mark.epoch}` };
}

function decodeMark(mark: InvalidationMark): DecodedMark | undefined {
  const parts = mark.value.split(':');
  if (parts.length !== 5) return undefined;
  const [shard, sequence, takenAt, connection] = parts.slice(0, 4).map(Number) as [number, number, number, number];
  if (!Number.isInteger(shard) || !Number.isSafeInteger(sequence) || !Number.isFinite(takenAt) || !Number.isInteger(connection)) return undefined;
  return { shard, sequence, takenAt, connection, epoch: parts[4]! };
}

/** The entry in a value, unless its key check (its last bytes, redisLayout.ts) names another cache key. */
function decodeCheckedEntry(bytes: Buffer, keyCheck: Buffer): CachedResponse | undefined {
  const checkAt = bytes.length - KEY_CHECK_BYTES;
  if (checkAt < 0 || !bytes.subarray(checkAt).equals(keyCheck)) return undefined;
  return decodeEntry(bytes.subarray(0, checkAt));
}

/** Sends `command` past auto-pipelining, as ioredis sends a pipeline's commands. */
function writeAtOnce(client: Redis, command: Command): Promise<Array<Buffer | null>> {
  client.sendCommand(command);
  return command.promise as Promise<Array<Buffer | null>>;
}

function parseDrainReply(reply: unknown): [deleted: number, remaining: number] {
  if (!Array.isArray(reply) || typeof reply[0] !== 'number' || typeof reply[1] !== 'number') {
    throw new Error(`unexpected reply from the invalidation script: ${JSON.stringify(reply)}`);
  }
  return [reply[0], reply[1]];
}

function parseAgeReply(reply: unknown): { aged: number; position: number; cursor: string } {
  if (!Array.isArray(reply) || typeof reply[0] !== 'number' || typeof reply[1] !== 'number' || typeof reply[2] !== 'string') {
    throw new Error(`unexpected reply from the soft-purge script: ${JSON.stringify(reply)}`);
  }
  return { aged: reply[0], position: reply[1], cursor: reply[2] };
}

function slices<T>(items: readonly T[], size: number): T[][] {
  return Array.from({ length: Math.ceil(items.length / size) }, (_, index) => items.slice(index * size, (index + 1) * size));
}

const LOCATIONS_REMEMBERED = 10_000;
