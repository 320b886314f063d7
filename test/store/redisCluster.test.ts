import { REGISTRATION_OVERHEAD_BYTES } from '../../src/apq/index.js';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createHash } from 'node:crypto';
import { createStore, createStores, type CacheStore } from '../../src/store/index.js';
import { RedisKeyLayout, SHARD_COUNT } from '../../src/store/redisLayout.js';
import { startRedisCluster, type RedisCluster } from '../support/redis.js';
import { describeStoreContract, jsonResponse, untilReady } from './contract.js';
import { scanKeys } from './redisInspection.js';

let cluster: RedisCluster;
let masters: Redis[];
let prefixNumber = 0;
const openStores: CacheStore[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster(3);
  masters = cluster.nodes.map(({ host, port }) => new Redis({ host, port }));
});

afterAll(async () => {
  for (const master of masters ?? []) master.disconnect();
  await cluster?.stop();
});

afterEach(async () => {
  await Promise.all(openStores.splice(0).map((store) => store.close()));
});

async function openStore(keyPrefix: string): Promise<CacheStore> {
  const nodes = cluster.nodes.map(({ host, port }) => `${host}:${port}`);
  const store = await untilReady(createStore({ cluster: { nodes }, keyPrefix, commandTimeoutMs: 1000 }, { memoryMaxBytes: 0 }));
  openStores.push(store);
  return store;
}

function uniquePrefix(name: string): string {
  prefixNumber += 1;
  return `${name}-${prefixNumber}:`;
}

describeStoreContract('Redis Cluster of three masters', () => openStore(uniquePrefix('contract')));

describe('Redis Cluster', () => {
  it('has no local cache: turning it on is refused, and by default every lookup reads Redis', async () => {
    const nodes = cluster.nodes.map(({ host, port }) => `${host}:${port}`);
    expect(() =>
      createStore({ cluster: { nodes }, keyPrefix: 'x:', commandTimeoutMs: 1000, localCache: { enabled: true, maxBytes: 1024 } }, { memoryMaxBytes: 0 }),
    ).toThrow('redis.localCache is not available with redis.cluster: invalidation tracking and the purge acknowledgement are per node');
    const store = await openStore(uniquePrefix('no-local'));
    const { mark } = await store.lookup('query');
    expect(await store.store('query', jsonResponse('x'), { tags: ['A'], ttlSeconds: 60, mark })).toBe(true);
    for (let index = 0; index < 3; index += 1) expect((await store.lookup('query')).localCache).toBeUndefined();
  });

  it('keeps the persisted-query registry in one slot and under its bound, the oldest going first', async () => {
    const nodes = cluster.nodes.map(({ host, port }) => `${host}:${port}`);
    const { cache, persistedQueries } = createStores(
      { cluster: { nodes }, keyPrefix: uniquePrefix('apq'), commandTimeoutMs: 1000 },
      { memoryMaxBytes: 0, persistedQueryMaxBytes: () => 5000 },
    );
    openStores.push(await untilReady(cache));
    // Each counted as about 1,000 bytes with its hash and REGISTRATION_OVERHEAD_BYTES: five fit.
    const queries = Array.from({ length: 30 }, (_, index) => `query Q${index} { a } #${'x'.repeat(900 - REGISTRATION_OVERHEAD_BYTES)}`);
    const hash = (query: string): string => createHash('sha256').update(query).digest('hex');
    for (const query of queries) await persistedQueries.register(hash(query), query, 60);
    const held = await Promise.all(queries.map(async (query) => (await persistedQueries.get(hash(query))) !== undefined));
    expect(held.map((isHeld, index) => (isHeld ? index : -1)).filter((index) => index >= 0)).toEqual([25, 26, 27, 28, 29]);
  });

  it('spreads entries over every master and invalidates them on every shard', async () => {
    const keyPrefix = uniquePrefix('spread');
    const layout = new RedisKeyLayout(keyPrefix);
    const store = await openStore(keyPrefix);
    const otherReplica = await openStore(keyPrefix);
    const keys = Array.from({ length: 200 }, (_, index) => `products-page-${index}`);
    const shards = new Set(keys.map((key) => layout.locate(key).shard));
    expect(shards.size).toBe(SHARD_COUNT);

    await Promise.all(
      keys.map(async (key) => {
        const { mark } = await store.lookup(key);
        await store.store(key, jsonResponse(key), { tags: ['Product', `Page:${key}`], ttlSeconds: 60, mark });
      }),
    );
    const entriesPerMaster = await Promise.all(masters.map(async (master) => (await scanKeys(master, `${keyPrefix}*:e:*`)).length));
    expect(entriesPerMaster.every((count) => count > 0)).toBe(true);
    expect(entriesPerMaster.reduce((sum, count) => sum + count, 0)).toBe(keys.length);

    expect(await otherReplica.invalidate(['Product'])).toBe(keys.length);
    const leftPerMaster = await Promise.all(masters.map(async (master) => (await scanKeys(master, `${keyPrefix}*:e:*`)).length));
    expect(leftPerMaster).toEqual(masters.map(() => 0));
    const recordsPerMaster = await Promise.all(masters.map(async (master) => (await scanKeys(master, `${keyPrefix}*:i:Product`)).length));
    expect(recordsPerMaster.every((count) => count > 0)).toBe(true);
    expect(recordsPerMaster.reduce((sum, count) => sum + count, 0)).toBe(SHARD_COUNT);
    const stillCached = await Promise.all(keys.map(async (key) => (await store.lookup(key)).entry !== undefined));
    expect(stillCached.filter(Boolean)).toEqual([]);
  });

  // The Redis failure audit: a node restarted from a snapshot (or failed over) while the Cluster
  // stays up brings its shards' sequences back, below marks taken before.
  it("refuses a mark taken before a node's connection was made again, however the sequences compare", async () => {
    const keyPrefix = uniquePrefix('restore');
    const layout = new RedisKeyLayout(keyPrefix);
    const store = await openStore(keyPrefix);
    for (let purge = 0; purge < 3; purge += 1) await store.invalidate(['Todo:9']);
    const { mark } = await store.lookup('todo-1');
    const sequenceKey = layout.sequenceKey(layout.locate('todo-1').shard);
    // Only the master holding the slot takes the key; the others answer MOVED.
    const owners = (await Promise.all(masters.map((master) => master.set(sequenceKey, '1').then(() => master, () => undefined)))).filter(Boolean);
    expect(owners).toHaveLength(1);
    await owners[0]!.client('KILL', 'TYPE', 'normal');
    await vi.waitFor(() => store.invalidate(['Todo:1']), { timeout: 5000, interval: 50 });
    expect(await store.store('todo-1', jsonResponse('old'), { tags: ['Todo:1'], ttlSeconds: 60, mark })).toBe(false);
    expect((await store.lookup('todo-1')).entry).toBeUndefined();
  });

  it("tells its listeners of a node's connection made again", async () => {
    const store = await openStore(uniquePrefix('reconnect'));
    const reconnections = vi.fn();
    store.onReconnect(reconnections);
    await masters[1]!.client('KILL', 'TYPE', 'normal');
    // The node is added again when a command is routed to it (or at the next slots refresh).
    await vi.waitFor(() => store.invalidate(['Todo:1']), { timeout: 5000, interval: 50 });
    await vi.waitFor(() => expect(reconnections).toHaveBeenCalled(), { timeout: 5000, interval: 20 });
  });
});
