import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createStore, StoreFull, type CacheStore, type InvalidationMark } from '../../src/store/index.js';
import { RedisKeyLayout, SHARD_COUNT } from '../../src/store/redisLayout.js';
import { startRedisSentinel, startRedisServer } from '../support/redis.js';
import { redisServerForTests } from '../support/redisForTests.js';
import { startTcpProxy } from '../support/tcpProxy.js';
import { bodyText, describeStoreContract, jsonResponse, sleep, untilReady } from './contract.js';
import { afterTrims, keysInSameShard, scanKeys } from './redisInspection.js';

const redis = redisServerForTests();
let prefixNumber = 0;
const openStores: CacheStore[] = [];

function uniquePrefix(name: string): string {
  prefixNumber += 1;
  return `${name}-${prefixNumber}:`;
}

async function openStore(keyPrefix: string, commandTimeoutMs = 1000, localCache?: { enabled: boolean; maxBytes: number }): Promise<CacheStore> {
  const store = await untilReady(createStore({ url: redis.server.url, keyPrefix, commandTimeoutMs, localCache }, { memoryMaxBytes: 0 }));
  openStores.push(store);
  return store;
}

afterEach(async () => {
  await Promise.all(openStores.splice(0).map((store) => store.close()));
});

async function storeAfterMiss(store: CacheStore, key: string, tags: readonly string[], ttlSeconds = 60, text = key): Promise<boolean> {
  const { mark } = await store.lookup(key);
  return store.store(key, jsonResponse(text), { tags, ttlSeconds, mark });
}

describeStoreContract('standalone Redis', () => openStore(uniquePrefix('contract')));

describe('race guard across a loss of Redis data', () => {
  it('refuses a mark taken before the data was lost, once the new lifetime has an invalidation', async () => {
    const keyPrefix = uniquePrefix('epoch');
    // Without the local cache: with it, a purge right after the loss fails (redisLocalCache.test.ts).
    const store = await openStore(keyPrefix, 1000, { enabled: false, maxBytes: 1 });
    await store.invalidate(['Todo:1']);
    const { mark } = await store.lookup('todo-1');
    // A restart without persistence, a failover to an empty replica, FLUSHALL: the counters restart.
    await redis.inspector.flushall();
    await store.invalidate(['Todo:1']);
    expect(await store.store('todo-1', jsonResponse('old'), { tags: ['Todo:1'], ttlSeconds: 60, mark })).toBe(false);
    expect((await store.lookup('todo-1')).entry).toBeUndefined();
  });

  it('refuses a mark taken before the shard\'s first invalidation once the data is lost after one', async () => {
    const store = await openStore(uniquePrefix('epoch'));
    const { mark } = await store.lookup('todo-3');
    await store.invalidate(['Todo:3']);
    await redis.inspector.flushall();
    expect(await store.store('todo-3', jsonResponse('old'), { tags: ['Todo:3'], ttlSeconds: 60, mark })).toBe(false);
    const fresh = await store.lookup('todo-3');
    expect(await store.store('todo-3', jsonResponse('new'), { tags: ['Todo:3'], ttlSeconds: 60, mark: fresh.mark })).toBe(true);
  });

  it('refuses such a mark even before any invalidation in the new lifetime', async () => {
    const store = await openStore(uniquePrefix('epoch'));
    await store.invalidate(['Todo:1']);
    const { mark } = await store.lookup('todo-2');
    await redis.inspector.flushall();
    expect(await store.store('todo-2', jsonResponse('old'), { tags: ['Todo:2'], ttlSeconds: 60, mark })).toBe(false);
  });
});

// The Redis failure audit: a Redis restarted from a snapshot keeps the shards' epochs and brings
// their sequences back, so invalidations after it recorded sequences below a mark taken before.
describe('race guard across a Redis that comes back from a snapshot', () => {
  it('refuses a mark taken on an earlier connection, however the sequences compare', async () => {
    const keyPrefix = uniquePrefix('restore');
    const store = await openStore(keyPrefix, 1000, { enabled: false, maxBytes: 1 });
    const layout = new RedisKeyLayout(keyPrefix);
    for (let purge = 0; purge < 3; purge += 1) await store.invalidate(['Todo:9']);
    const { mark } = await store.lookup('todo-1');
    const shard = layout.locate('todo-1').shard;
    // What a restore does to the shard: its epoch stays, its sequence goes back to the snapshot's.
    await redis.inspector.set(layout.sequenceKey(shard), '1');
    await redis.inspector.client('KILL', 'TYPE', 'normal');
    await vi.waitFor(() => store.ping(), { timeout: 5000, interval: 50 });
    await store.invalidate(['Todo:1']);
    expect(await store.store('todo-1', jsonResponse('old'), { tags: ['Todo:1'], ttlSeconds: 60, mark })).toBe(false);
    expect((await store.lookup('todo-1')).entry).toBeUndefined();
    expect(await storeAfterMiss(store, 'todo-1', ['Todo:1'])).toBe(true);
  });
});

describe('reconnections', () => {
  it('tells its listeners of each connection made again, once it is ready for commands', async () => {
    const store = await openStore(uniquePrefix('reconnect'));
    const answers: string[] = [];
    store.onReconnect(() => void store.ping().then(() => answers.push('ping')));
    await redis.inspector.client('KILL', 'TYPE', 'normal');
    await vi.waitFor(() => expect(answers).toEqual(['ping']), { timeout: 5000, interval: 20 });
    await redis.inspector.client('KILL', 'TYPE', 'normal');
    await vi.waitFor(() => expect(answers).toEqual(['ping', 'ping']), { timeout: 5000, interval: 20 });
  });
});

// The Redis failure audit: at maxmemory with noeviction (deploy/redis), every invalidation failed,
// deleting nothing, and the entries stayed HITs until they expired.
describe('a full Redis (maxmemory, noeviction)', () => {
  /** A store on a Redis of its own; `fill` is the memory limit set below what Redis holds, so that every write that may use memory is refused. */
  async function onFullRedis(use: (store: CacheStore, room: { fill: () => Promise<void>; free: () => Promise<void> }) => Promise<void>): Promise<void> {
    const full = await startRedisServer();
    const admin = new Redis(full.url);
    try {
      const store = await untilReady(createStore({ url: full.url, keyPrefix: 'full:', commandTimeoutMs: 1000, localCache: { enabled: false, maxBytes: 1 } }, { memoryMaxBytes: 0 }));
      openStores.push(store);
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      const fill = async (): Promise<void> => {
        await admin.config('SET', 'maxmemory', String(Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]) - 64 * 1024));
        await expect(admin.set('filler', 'x')).rejects.toThrow(/^OOM/);
      };
      await use(store, { fill, free: async () => void (await admin.config('SET', 'maxmemory', '0')) });
    } finally {
      await Promise.all(openStores.splice(0).map((store) => store.close()));
      admin.disconnect();
      await full.stop();
    }
  }

  it('still deletes what an invalidation or a purge of everything names, and records it', async () => {
    await onFullRedis(async (store, room) => {
      expect(await storeAfterMiss(store, 'todo-1', ['Todo:1'])).toBe(true);
      expect(await storeAfterMiss(store, 'todo-2', ['Todo:2'])).toBe(true);
      const { mark } = await store.lookup('todo-1');
      await room.fill();
      const { mark: newMark } = await store.lookup('todo-3');
      await expect(store.store('todo-3', jsonResponse('todo-3'), { tags: ['Todo:3'], ttlSeconds: 60, mark: newMark })).rejects.toThrow(/^OOM/);

      expect(await store.invalidate(['Todo:1'])).toBe(1);
      expect((await store.lookup('todo-1')).entry).toBeUndefined();
      await room.free();
      // Recorded too: an answer fetched before it is not stored once Redis has room again.
      expect(await store.store('todo-1', jsonResponse('old'), { tags: ['Todo:1'], ttlSeconds: 60, mark })).toBe(false);
      await room.fill();
      expect(await store.invalidateAll()).toBe(1);
      expect((await store.lookup('todo-2')).entry).toBeUndefined();
    });
  });

  // A soft purge writes its record first, which a full Redis refuses: the purge handler then removes
  // the entries instead (test/purge/handler.test.ts).
  it('refuses a soft purge as StoreFull', async () => {
    await onFullRedis(async (store, room) => {
      expect(await storeAfterMiss(store, 'todo-1', ['Todo:1'])).toBe(true);
      await room.fill();
      await expect(store.markStale(['Todo:1'])).rejects.toBeInstanceOf(StoreFull);
      await expect(store.markAllStale()).rejects.toThrow(/^OOM /);
    });
  });
});

// The Redis failure audit: under allkeys-lru a tag index was evicted and its entry kept, so a purge
// answered true and the entry stayed a HIT; nothing said the policy was wrong.
describe('an evicting Redis', () => {
  it("says at error, on each connection, that Redis may evict svc-cache's keys", async () => {
    const evicting = await startRedisServer();
    const admin = new Redis(evicting.url);
    const lines: Array<{ level: number; msg: string; maxmemoryPolicy?: string }> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
    const policyLines = () => lines.filter((line) => line.maxmemoryPolicy !== undefined);
    try {
      const open = async () => {
        const store = await untilReady(createStore({ url: evicting.url, keyPrefix: 'evicting:', commandTimeoutMs: 1000 }, { memoryMaxBytes: 0, logger }));
        openStores.push(store);
        return store;
      };
      await open();
      await sleep(100);
      expect(policyLines()).toEqual([]);
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
      await open();
      await vi.waitFor(() => expect(policyLines()).toHaveLength(1));
      expect(policyLines()[0]).toMatchObject({ level: 50, maxmemoryPolicy: 'allkeys-lru' });
      expect(policyLines()[0]!.msg).toMatch(/^Redis may evict svc-cache's keys .*set maxmemory-policy noeviction, and once keys were evicted delete those under redis.keyPrefix/);
    } finally {
      await Promise.all(openStores.splice(0).map((store) => store.close()));
      admin.disconnect();
      await evicting.stop();
    }
  });
});

describe('Redis connection', () => {
  /**
   * The first `count` MGETs and EVALSHAs a new store on keys under `keyPrefix` writes while `act`
   * runs (after a first lookup, which gives `act` its mark), in the order its connection carries
   * them to Redis: read from a TCP proxy in front of Redis. MONITOR showed the same, but its
   * connection made ioredis throw "Command queue state error" now and then.
   */
  async function commandsSent(
    keyPrefix: string,
    count: number,
    act: (store: CacheStore, mark: InvalidationMark) => Promise<unknown>,
    { commandTimeoutMs = 1000, first = async () => undefined }: { commandTimeoutMs?: number; first?: (store: CacheStore) => Promise<void> } = {},
  ): Promise<string[]> {
    const proxy = await startTcpProxy(redis.server.port);
    // Without the local cache: its heartbeat's script, once a second on the same connection,
    // could land among the commands counted (a CI run saw it between a store and a lookup).
    const store = await untilReady(
      createStore({ url: `redis://127.0.0.1:${proxy.port}`, keyPrefix, commandTimeoutMs, localCache: { enabled: false, maxBytes: 1 } }, { memoryMaxBytes: 0 }),
    );
    try {
      const { mark } = await store.lookup('todos');
      await first(store);
      const before = proxy.connections().map((connection) => connection.sentText().length);
      await act(store, mark);
      const sent = () => proxy.connections().flatMap((connection, index) => commandNames(connection.sentText().slice(before[index] ?? 0)));
      await vi.waitFor(() => expect(sent().length).toBeGreaterThanOrEqual(count));
      return sent().slice(0, count);
    } finally {
      await store.close();
      await proxy.close();
    }
  }

  /** The MGET and EVALSHA commands in what a client sent (RESP arrays of bulk strings), in order. */
  function commandNames(resp: string): string[] {
    return [...resp.matchAll(/\*\d+\r\n\$\d+\r\n(mget|evalsha)\r\n/gi)].map((match) => match[1]!.toLowerCase());
  }

  it('writes a lookup at once while no other lookup waits on Redis, and a store at once too', async () => {
    const commands = await commandsSent(uniquePrefix('lookup-alone'), 2, (store, mark) =>
      Promise.all([store.lookup('users'), store.store('todos', jsonResponse('todos'), { tags: ['Todo'], ttlSeconds: 60, mark })]),
    );
    expect(commands).toEqual(['mget', 'evalsha']);
  });

  it('holds lookups made while one waits on Redis for the next turn of the event loop, and writes a store ahead of them', async () => {
    const commands = await commandsSent(uniquePrefix('pipelining'), 4, (store, mark) =>
      Promise.all([
        store.lookup('users'),
        store.lookup('tags'),
        store.lookup('lists'),
        store.store('todos', jsonResponse('todos'), { tags: ['Todo'], ttlSeconds: 60, mark }),
      ]),
    );
    expect(commands).toEqual(['mget', 'evalsha', 'mget', 'mget']);
  });

  it('trims the indexes a store joined only after the turn of the event loop its answer is written in', async () => {
    // The lookup stands for the answer: made after the store resolved and a process.nextTick, as
    // late in that turn as anything the answer's writing does.
    const commands = await commandsSent(uniquePrefix('trim-after'), 3, (store, mark) =>
      store
        .store('todos', jsonResponse('todos'), { tags: ['Todo'], ttlSeconds: 60, mark })
        .then(() => new Promise((resolve) => process.nextTick(resolve)))
        .then(() => store.lookup('users')),
    );
    expect(commands).toEqual(['evalsha', 'mget', 'evalsha']);
  });

  it('writes a lookup at once again after one that timed out', async () => {
    const timedOut = async (store: CacheStore): Promise<void> => {
      const admin = redis.inspector.duplicate();
      try {
        await admin.client('PAUSE', 300, 'ALL');
        await expect(store.lookup('users')).rejects.toThrow(/timed out/);
        await sleep(400);
      } finally {
        admin.disconnect();
      }
    };
    const commands = await commandsSent(
      uniquePrefix('lookup-after-timeout'),
      2,
      (store, mark) => Promise.all([store.lookup('lists'), store.store('todos', jsonResponse('todos'), { tags: ['Todo'], ttlSeconds: 60, mark })]),
      { commandTimeoutMs: 100, first: timedOut },
    );
    expect(commands).toEqual(['mget', 'evalsha']);
  });
});

describe('Redis data model', () => {
  it('gives every key a lifetime except a fixed set of bookkeeping keys', async () => {
    const keyPrefix = uniquePrefix('model');
    const layout = new RedisKeyLayout(keyPrefix);
    const store = await openStore(keyPrefix);
    const [shortLived, longLived] = keysInSameShard(layout, 2) as [string, string];
    const { shard } = layout.locate(shortLived);

    await storeAfterMiss(store, shortLived, ['Product:1', 'Product'], 1);
    await storeAfterMiss(store, longLived, ['Product'], 30);
    expect(await redis.inspector.pttl(layout.entryKey(layout.locate(shortLived)))).toBeLessThanOrEqual(1000);
    expect(await redis.inspector.scard(layout.tagIndexKey(shard, 'Product'))).toBe(2);
    // An index outlives its longest-lived entry by up to an eighth of that entry's lifetime.
    expect(await redis.inspector.pttl(layout.tagIndexKey(shard, 'Product'))).toBeGreaterThan(30_000);
    expect(await redis.inspector.pttl(layout.tagIndexKey(shard, 'Product'))).toBeLessThanOrEqual(33_750);
    expect(await redis.inspector.pttl(layout.tagIndexKey(shard, 'Product:1'))).toBeGreaterThan(1000);
    expect(await redis.inspector.pttl(layout.tagIndexKey(shard, 'Product:1'))).toBeLessThanOrEqual(1125);

    await store.invalidate(['User:1']);
    for (let each = 0; each < SHARD_COUNT; each += 1) {
      const recordTtl = await redis.inspector.pttl(layout.tagInvalidationKey(each, 'User:1'));
      expect(recordTtl).toBeGreaterThan(0);
      expect(recordTtl).toBeLessThanOrEqual(70_000);
    }

    await sleep(1200);
    expect(await redis.inspector.exists(layout.tagIndexKey(shard, 'Product:1'))).toBe(0);
    expect(await redis.inspector.scard(layout.tagIndexKey(shard, 'Product'))).toBe(2);

    const keys = await scanKeys(redis.inspector, `${keyPrefix}*`);
    const ttls = await Promise.all(keys.map((key) => redis.inspector.pttl(key)));
    const keptForever = keys.filter((_, index) => ttls[index] === -1);
    const bookkeeping = [...Array.from({ length: SHARD_COUNT }, (_, each) => [layout.sequenceKey(each), layout.floorKey(each), layout.epochKey(each)]).flat(), layout.registrySinceKey()];
    expect(keptForever.every((key) => bookkeeping.includes(key))).toBe(true);
  });

  it('leaves an index it stores into without extending its lifetime while it outlives the entry', async () => {
    const keyPrefix = uniquePrefix('slack');
    const layout = new RedisKeyLayout(keyPrefix);
    const store = await openStore(keyPrefix);
    const [first, second] = keysInSameShard(layout, 2) as [string, string];
    const index = layout.tagIndexKey(layout.locate(first).shard, 'Product');

    await storeAfterMiss(store, first, ['Product'], 80);
    await redis.inspector.pexpire(index, 85_000);
    await storeAfterMiss(store, second, ['Product'], 80);
    expect(await redis.inspector.pttl(index)).toBeLessThanOrEqual(85_000);
    expect(await redis.inspector.pttl(index)).toBeGreaterThan(80_000);
    await redis.inspector.pexpire(index, 70_000);
    await storeAfterMiss(store, second, ['Product'], 80);
    expect(await redis.inspector.pttl(index)).toBeGreaterThan(85_000);
  });

  it('trims the ids of entries that are gone from an index a store joins, at most four per store', async () => {
    const keyPrefix = uniquePrefix('trim');
    const layout = new RedisKeyLayout(keyPrefix);
    const store = await openStore(keyPrefix);
    const [later, ...gone] = keysInSameShard(layout, 6) as [string, ...string[]];
    const { shard } = layout.locate(later);
    for (const [index, key] of gone.entries()) await storeAfterMiss(store, key, ['Product', `Product:${index}`]);
    await afterTrims(store);
    // Each entry is deleted through its own tag; the shared index and the shard's list still name it.
    expect(await store.invalidate(gone.map((_, index) => `Product:${index}`))).toBe(5);
    expect(await redis.inspector.scard(layout.tagIndexKey(shard, 'Product'))).toBe(5);
    expect(await redis.inspector.scard(layout.allEntriesKey(shard))).toBe(5);

    const indexes = [layout.tagIndexKey(shard, 'Product'), layout.allEntriesKey(shard)];
    const listed = () => Promise.all(indexes.map((index) => redis.inspector.scard(index)));
    // The trim samples ids at random, the one just stored among them, and stops at a live one.
    await storeAfterMiss(store, later, ['Product']);
    await afterTrims(store);
    for (const count of await listed()) expect(count).toBeGreaterThanOrEqual(2);
    // Up to five dead ids remain. Each store of the same entry trims again, and removes at least
    // one unless the first id drawn is the live one (at most one chance in two): 40 stores leave a
    // dead id in an index by a chance below 1e-7.
    for (let round = 0; round < 40; round += 1) await storeAfterMiss(store, later, ['Product']);
    await afterTrims(store);
    expect(await listed()).toEqual([1, 1]);
    for (const index of indexes) expect(await redis.inspector.sismember(index, layout.locate(later).entryId)).toBe(1);
  });

  it('refuses a store when any of its 10,000 tags was invalidated after the mark, however far down the list', async () => {
    const store = await openStore(uniquePrefix('many-tags'));
    const tags = Array.from({ length: 10_000 }, (_, index) => `Todo:${index}`);
    expect(await storeAfterMiss(store, 'all-todos', tags)).toBe(true);
    const { mark } = await store.lookup('all-todos');
    await store.invalidate(['Todo:9999']);
    expect(await store.store('all-todos', jsonResponse('old'), { tags, ttlSeconds: 60, mark })).toBe(false);
  });

  // The admin-surface audit: a purge of 3,000 ids answered 503 on every retry, each shard's call of
  // 1,000 tags timing out behind the other fifteen shards' calls.
  it('purges 5,000 tags under a command timeout of 100 ms: the shards together hold few tags in flight', async () => {
    const store = await openStore(uniquePrefix('wide-purge'), 100);
    const tags = Array.from({ length: 5_000 }, (_, index) => `Todo:${index}`);
    expect(await storeAfterMiss(store, 'first-todos', tags.slice(0, 50))).toBe(true);
    expect(await storeAfterMiss(store, 'last-todo', tags.slice(-1))).toBe(true);
    expect(await store.invalidate(tags)).toBe(2);
    expect(await store.markStale(tags)).toBe(0);
  });

  it('removes invalidated entries from the tag index, leaving no empty index behind', async () => {
    const keyPrefix = uniquePrefix('drain');
    const layout = new RedisKeyLayout(keyPrefix);
    // 2,500 stores sent at once queue behind each other: the bound is on the drain, not on latency.
    const store = await openStore(keyPrefix, 30_000);
    const keys = Array.from({ length: 2500 }, (_, index) => `list-${index}`);
    await Promise.all(keys.map((key) => storeAfterMiss(store, key, ['Product'])));
    expect(await store.invalidate(['Product'])).toBe(keys.length);
    expect(await scanKeys(redis.inspector, `${keyPrefix}*:ti:Product`)).toEqual([]);
    expect(await scanKeys(redis.inspector, `${keyPrefix}*:e:*`)).toEqual([]);
    expect(await store.invalidateAll()).toBe(0);
    expect(await scanKeys(redis.inspector, `${keyPrefix}*:ids`)).toEqual([]);
    for (const key of keys.slice(0, 3)) expect((await store.lookup(key)).entry).toBeUndefined();
    expect(layout.entryKeyPrefix(0).startsWith(keyPrefix)).toBe(true);
  });

  it('keeps tag indexes as intsets of 64-bit ids, and names a long tag by its hash', async () => {
    const keyPrefix = uniquePrefix('compact');
    const layout = new RedisKeyLayout(keyPrefix);
    const store = await openStore(keyPrefix);
    const longTag = `Report:${'x'.repeat(200)}`;
    const keys = keysInSameShard(layout, 300);
    for (const key of keys) await storeAfterMiss(store, key, ['Product', longTag]);
    const { shard } = layout.locate(keys[0]!);
    expect(await redis.inspector.object('ENCODING', layout.tagIndexKey(shard, 'Product'))).toBe('intset');
    expect(await redis.inspector.object('ENCODING', layout.allEntriesKey(shard))).toBe('intset');
    expect(await redis.inspector.scard(layout.tagIndexKey(shard, 'Product'))).toBe(300);
    const indexKeys = await scanKeys(redis.inspector, `${keyPrefix}*:ti:*`);
    expect(indexKeys.every((key) => !key.includes('xxxx') && key.length < keyPrefix.length + 60)).toBe(true);
    expect(await store.invalidate([longTag])).toBe(300);
  });

  it('reads an entry stored under the same 64-bit id for another cache key as absent (the key check)', async () => {
    const keyPrefix = uniquePrefix('check');
    const layout = new RedisKeyLayout(keyPrefix);
    const store = await openStore(keyPrefix);
    const [stored, other] = keysInSameShard(layout, 2) as [string, string];
    await storeAfterMiss(store, stored, ['A']);
    // What a collision of the 64-bit ids would leave: other's entry key holding stored's value.
    await redis.inspector.copy(layout.entryKey(layout.locate(stored)), layout.entryKey(layout.locate(other)));
    expect((await store.lookup(stored)).entry).toBeDefined();
    expect((await store.lookup(other)).entry).toBeUndefined();
  });

  it.each([
    { purge: 'markStale', run: (store: CacheStore) => store.markStale(['Product']) },
    { purge: 'markAllStale', run: (store: CacheStore) => store.markAllStale() },
  ])('$purge: soft-purges a large index in several bounded script calls, aging every entry it lists', async ({ run }) => {
    const keyPrefix = uniquePrefix('soft');
    const layout = new RedisKeyLayout(keyPrefix);
    const store = await openStore(keyPrefix, 10_000);
    expect(await run(store)).toBe(0); // loads the scripts, so that EVALSHA finds them
    // One real entry, copied under 5,000 more ids of its shard and listed in its indexes.
    const seed = layout.locate('seed');
    const { mark } = await store.lookup('seed');
    const response = { ...jsonResponse('seed'), maxAge: 30, swr: 60 };
    expect(await store.store('seed', response, { tags: ['Product'], ttlSeconds: 90, mark })).toBe(true);
    await afterTrims(store);
    const copies = 5000;
    const pipeline = redis.inspector.pipeline();
    for (let id = 1; id <= copies; id += 1) {
      pipeline.copy(layout.entryKey(seed), `${layout.entryKeyPrefix(seed.shard)}${id}`);
      pipeline.sadd(layout.tagIndexKey(seed.shard, 'Product'), String(id));
      pipeline.sadd(layout.allEntriesKey(seed.shard), String(id));
    }
    await pipeline.exec();

    await redis.inspector.config('RESETSTAT');
    expect(await run(store)).toBe(copies + 1);
    const stats = await commandStats();
    const { evalsha = 0, sscan = 0 } = stats;
    // Commands of constant cost, and SSCAN with a COUNT: nothing copies or reads an index whole.
    // With the local cache: each script opts out of tracking, and the purge ends with its barrier
    // (a script of its own that counts the barrier channel's subscribers, reads the registered
    // replicas by Redis's clock, and publishes). The local cache's heartbeat (a ping of its
    // subscriber, and its registration: REGISTER_LOCAL_CACHE) may fall within the purge too.
    const boundedCommands = ['evalsha', 'exists', 'set', 'get', 'incr', 'sscan', 'getrange', 'setrange', 'pttl', 'pexpire', 'client|caching', 'publish', 'pubsub|numsub', 'time', 'zrangebyscore', 'ping', 'zadd', 'zremrangebyscore'];
    expect(Object.keys(stats).filter((command) => !boundedCommands.includes(command))).toEqual([]);
    // One call per shard records the purge, one walks each other shard's empty index, the shard
    // holding the index walks it in calls of about DRAIN_BUDGET (1,000) ids each, and one publishes
    // the barrier.
    const walkCalls = evalsha - SHARD_COUNT - (SHARD_COUNT - 1) - 1 - (stats.zadd ?? 0);
    expect(walkCalls).toBeGreaterThanOrEqual(copies / 1000);
    expect(walkCalls).toBeLessThanOrEqual((2 * copies) / 1000);
    expect(sscan).toBeGreaterThanOrEqual(SHARD_COUNT - 1 + walkCalls);
    expect(Math.floor((Date.now() - (await store.lookup('seed')).entry!.storedAt) / 1000)).toBeGreaterThan(30);
    expect(await run(store)).toBe(0);
  });

  it('answers a lookup with one command and never lists or scans the keyspace (without the local cache, which answers repeated ones)', async () => {
    const store = await openStore(uniquePrefix('round-trips'), 1000, { enabled: false, maxBytes: 1 });
    await storeAfterMiss(store, 'cached', ['A']);
    await afterTrims(store);

    await redis.inspector.config('RESETSTAT');
    for (let index = 0; index < 10; index += 1) {
      await store.lookup('cached');
      await store.lookup(`missing-${index}`);
    }
    const lookupStats = await commandStats();
    expect(lookupStats).toEqual({ mget: 20 });

    await storeAfterMiss(store, 'another', ['A', 'B']);
    await store.invalidate(['A']);
    await store.invalidateAll();
    const allStats = await commandStats();
    expect(Object.keys(allStats).filter((command) => /^(keys|scan)$/.test(command))).toEqual([]);
  });

  it('stores a body raw behind a header of a few dozen bytes', async () => {
    const keyPrefix = uniquePrefix('size');
    const layout = new RedisKeyLayout(keyPrefix);
    const store = await openStore(keyPrefix);
    for (const bodyBytes of [1000, 10_000, 100_000, 1_000_000]) {
      const key = `size-${bodyBytes}`;
      const { mark } = await store.lookup(key);
      const response = { ...jsonResponse(key), body: Buffer.alloc(bodyBytes, 'x'), identityLength: bodyBytes };
      await store.store(key, response, { tags: ['Product', 'Product:1', 'Query.products'], ttlSeconds: 60, mark });
      const entryBytes = await redis.inspector.strlen(layout.entryKey(layout.locate(key)));
      expect(entryBytes - bodyBytes).toBeLessThan(100);
      if (bodyBytes >= 10_000) {
        // Beyond the encoding, Redis adds its key and object headers and the allocator's size-class rounding.
        const usage = (await redis.inspector.memory('USAGE', layout.entryKey(layout.locate(key)), 'SAMPLES', 0)) as number;
        expect(usage / bodyBytes).toBeLessThan(1.3);
      }
    }
  });

  it('rejects a key prefix that would break Cluster hash tags', () => {
    expect(() => createStore({ url: redis.server.url, keyPrefix: 'svc{a}:', commandTimeoutMs: 250 }, { memoryMaxBytes: 0 })).toThrow(
      /keyPrefix/,
    );
  });
});

describe('Redis shared by services and replicas', () => {
  it('keeps services with different key prefixes apart', async () => {
    const shop = await openStore(uniquePrefix('shop'));
    const blog = await openStore(uniquePrefix('blog'));
    await storeAfterMiss(shop, 'query', ['Product'], 60, 'shop');
    expect((await blog.lookup('query')).entry).toBeUndefined();
    await storeAfterMiss(blog, 'query', ['Product'], 60, 'blog');

    expect(await blog.invalidate(['Product'])).toBe(1);
    expect(bodyText(await shop.lookup('query'))).toBe('shop');
    await storeAfterMiss(blog, 'query', ['Product'], 60, 'blog');
    expect(await shop.invalidateAll()).toBe(1);
    expect(bodyText(await blog.lookup('query'))).toBe('blog');
  });

  it('lets every replica see the entries and invalidations of the others', async () => {
    const keyPrefix = uniquePrefix('replicas');
    const [first, second] = await Promise.all([openStore(keyPrefix), openStore(keyPrefix)]);

    await storeAfterMiss(first, 'product-1', ['Product:1'], 60, 'from first');
    expect(bodyText(await second.lookup('product-1'))).toBe('from first');

    expect(await second.invalidate(['Product:1'])).toBe(1);
    expect((await first.lookup('product-1')).entry).toBeUndefined();

    const missedOnFirst = await first.lookup('product-1');
    await second.invalidate(['Product:1']);
    const stale = { tags: ['Product:1'], ttlSeconds: 60, mark: missedOnFirst.mark };
    expect(await first.store('product-1', jsonResponse('stale'), stale)).toBe(false);

    await storeAfterMiss(first, 'product-2', ['Product:2']);
    expect(await second.invalidateAll()).toBe(1);
    expect((await first.lookup('product-2')).entry).toBeUndefined();
  });
});

async function commandStats(): Promise<Record<string, number>> {
  const info = await redis.inspector.info('commandstats');
  const stats: Record<string, number> = {};
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    const [, command = '', calls = '0'] = match;
    if (!/^(info|config\|resetstat)$/.test(command)) stats[command] = Number(calls);
  }
  return stats;
}

describe('Redis connection settings', () => {
  it('authenticates with the password in the URL and fails without it', async () => {
    const guarded = await startRedisServer({ password: 'p@ss word/with:odd chars' });
    try {
      const store = await untilReady(createStore({ url: guarded.url, keyPrefix: 'auth:', commandTimeoutMs: 1000 }, { memoryMaxBytes: 0 }));
      openStores.push(store);
      await storeAfterMiss(store, 'query', ['A']);
      expect(bodyText(await store.lookup('query'))).toBe('query');

      const anonymousUrl = `redis://127.0.0.1:${guarded.port}`;
      const anonymous = createStore({ url: anonymousUrl, keyPrefix: 'auth:', commandTimeoutMs: 250 }, { memoryMaxBytes: 0 });
      await expect(anonymous.lookup('query')).rejects.toThrow();
      await anonymous.close();
      // /readyz says why the connection is not up (README, Faults).
      const wrongPassword = createStore({ url: `redis://:wrong@127.0.0.1:${guarded.port}`, keyPrefix: 'auth:', commandTimeoutMs: 500 }, { memoryMaxBytes: 0 });
      await expect(wrongPassword.ping()).rejects.toThrow(/^redis is not connected: WRONGPASS invalid username-password pair/);
      await wrongPassword.close();
    } finally {
      await Promise.all(openStores.splice(0).map((store) => store.close()));
      await guarded.stop();
    }
  });

  it('finds the master through Sentinel', async () => {
    const sentinel = await startRedisSentinel(redis.server, 'svc-master');
    try {
      const sentinels = [`127.0.0.1:${sentinel.port}`];
      const config = { sentinel: { name: 'svc-master', sentinels }, keyPrefix: uniquePrefix('sentinel'), commandTimeoutMs: 1000 };
      const store = await untilReady(createStore(config, { memoryMaxBytes: 0 }));
      openStores.push(store);
      await storeAfterMiss(store, 'query', ['A']);
      expect(bodyText(await store.lookup('query'))).toBe('query');
      // The local cache's subscriber follows the same master.
      await vi.waitFor(async () => expect((await store.lookup('query')).localCache).toBe('hit'), { timeout: 10_000, interval: 50 });
      expect(await store.invalidate(['A'])).toBe(1);
      expect((await store.lookup('query')).entry).toBeUndefined();
    } finally {
      await Promise.all(openStores.splice(0).map((store) => store.close()));
      await sentinel.stop();
    }
  });
});

describe('a rolling upgrade from entry format 2', () => {
  it('ages an entry a replica of the earlier version stored when a soft purge names its tag', async () => {
    const keyPrefix = uniquePrefix('format2');
    const store = await openStore(keyPrefix);
    expect(await storeAfterMiss(store, 'todo-1', ['Todo:1'])).toBe(true);
    const client = new Redis(redis.server.url);
    try {
      // Formats 2 and 3 share their first 25 bytes (version, storedAt, maxAge): the version byte is what differs.
      const entryKeys: string[] = [];
      for (const key of await scanKeys(client, `${keyPrefix}*`)) {
        if ((await client.type(key)) === 'string' && (await client.getrangeBuffer(key, 0, 0))[0] === 3) entryKeys.push(key);
      }
      expect(entryKeys).toHaveLength(1);
      await client.setrange(entryKeys[0]!, 0, '\u0002');
      expect(await store.markStale(['Todo:1'])).toBe(1);
    } finally {
      client.disconnect();
    }
  });
});
