import { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Config } from '../../src/config/index.js';
import { createStore, isFresh, UnconfirmedInvalidation, type CacheStore, type CachedResponse, type Lookup } from '../../src/store/index.js';
import { RedisKeyLayout } from '../../src/store/redisLayout.js';
import { redisServerForTests } from '../support/redisForTests.js';
import { startTcpProxy, type ProxiedConnection, type TcpProxy } from '../support/tcpProxy.js';
import { bodyText, jsonResponse, untilReady } from './contract.js';
import { afterTrims } from './redisInspection.js';

/**
 * The Redis store's replica-local cache (README, Redis: the replica-local cache): two stores on one
 * Redis play two replicas. Replica B connects through a TCP proxy, so that a test can hold back
 * Redis's replies on one of its connections and tell its connections apart in CLIENT LIST.
 */

const redis = redisServerForTests();
let prefixNumber = 0;
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Replica {
  store: CacheStore;
  /** Whether its local cache serves now, as its observer was last told. */
  enabled(): boolean;
  acknowledgedPurges: number[];
  proxy: TcpProxy | undefined;
}

type LocalCacheConfig = NonNullable<Config['redis']>['localCache'];

async function openReplica(
  keyPrefix: string,
  options: { viaProxy?: boolean; localCache?: LocalCacheConfig; commandTimeoutMs?: number } = {},
): Promise<Replica> {
  const proxy = options.viaProxy ? await startTcpProxy(redis.server.port) : undefined;
  const port = proxy?.port ?? redis.server.port;
  let enabled = false;
  const acknowledgedPurges: number[] = [];
  const store = createStore(
    { url: `redis://127.0.0.1:${port}`, keyPrefix, commandTimeoutMs: options.commandTimeoutMs ?? 2000, localCache: options.localCache },
    {
      memoryMaxBytes: 0,
      localCacheObserver: {
        localCacheChanged: (on) => (enabled = on),
        acknowledged: (seconds) => acknowledgedPurges.push(seconds),
      },
    },
  );
  cleanups.push(async () => {
    await store.close();
    await proxy?.close();
  });
  await untilReady(store);
  if (options.localCache?.enabled !== false) await vi.waitFor(() => expect(enabled).toBe(true), { timeout: 10_000, interval: 20 });
  return { store, enabled: () => enabled, acknowledgedPurges, proxy };
}

async function twoReplicas(name: string, options: { localCache?: LocalCacheConfig } = {}): Promise<{ a: Replica; b: Replica; keyPrefix: string }> {
  prefixNumber += 1;
  const keyPrefix = `${name}-${prefixNumber}:`;
  const a = await openReplica(keyPrefix, options);
  const b = await openReplica(keyPrefix, { ...options, viaProxy: true });
  return { a, b, keyPrefix };
}

/** Fresh for 30 s, then 60 s of swr, so that a soft purge keeps it (stale). */
function entry(text: string): CachedResponse {
  return { ...jsonResponse(text), maxAge: 30, swr: 60 };
}

async function storeAfterMiss(store: CacheStore, key: string, text: string, tags: readonly string[] = ['Product:1', 'Product']): Promise<boolean> {
  const { mark } = await store.lookup(key);
  return store.store(key, entry(text), { tags, ttlSeconds: 90, mark });
}

/** B reads the entry from Redis once, and its next lookup is answered locally. */
async function cachedLocally(replica: Replica, key: string, text: string): Promise<void> {
  const first = await replica.store.lookup(key);
  expect([bodyText(first), first.localCache]).toEqual([text, 'miss']);
  // A local record answers at once, not through a promise (src/store/types.ts).
  const second = replica.store.lookup(key);
  if (second instanceof Promise) throw new Error(`${key}: a locally held entry was looked up through a promise`);
  expect([bodyText(second), second.localCache]).toEqual([text, 'hit']);
}

/** B's subscriber and command connections, as Redis lists them. */
async function connectionsOf(replica: Replica): Promise<{ subscriber: ClientInfo; command: ClientInfo }> {
  const addresses = new Set(replica.proxy!.connections().map((connection) => connection.upstreamAddress));
  const clients = parseClientList(String(await redis.inspector.client('LIST'))).filter((client) => addresses.has(client.addr));
  const subscriber = clients.find((client) => client.flags.includes('P'));
  const command = clients.find((client) => client.flags.includes('t'));
  expect(subscriber?.name).toMatch(/^svc-cache-local-cache-/);
  expect(command?.redir).toBe(subscriber?.id);
  return { subscriber: subscriber!, command: command! };
}

function proxiedConnection(replica: Replica, client: ClientInfo): ProxiedConnection {
  return replica.proxy!.connections().find((connection) => connection.upstreamAddress === client.addr)!;
}

interface ClientInfo {
  id: string;
  addr: string;
  name: string;
  flags: string;
  redir: string;
}

function parseClientList(list: string): ClientInfo[] {
  return list
    .trim()
    .split('\n')
    .map((line) => Object.fromEntries(line.split(' ').map((field) => field.split('=', 2) as [string, string])) as unknown as ClientInfo);
}

/** Commands Redis ran since RESETSTAT, but for the heartbeat's PING and the inspector's own. */
async function commandStats(): Promise<Record<string, number>> {
  const info = await redis.inspector.info('commandstats');
  const stats: Record<string, number> = {};
  for (const [, command = '', calls = '0'] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (!/^(info|config\|resetstat|ping)$/.test(command)) stats[command] = Number(calls);
  }
  return stats;
}

describe('replica-local cache', () => {
  it('answers a repeated lookup of a fresh entry without Redis, and of a stale one from Redis', async () => {
    const { a, b } = await twoReplicas('local-hit');
    expect(await storeAfterMiss(a.store, 'fresh', 'fresh')).toBe(true);
    // The store trims its indexes once its answer is out: not within the counted lookups (CI once
    // counted that trim's script there).
    await afterTrims(a.store);
    await cachedLocally(b, 'fresh', 'fresh');

    await redis.inspector.config('RESETSTAT');
    for (let index = 0; index < 10; index += 1) {
      expect((await b.store.lookup('fresh')).localCache).toBe('hit');
      expect((await b.store.lookup(`missing-${index}`)).localCache).toBe('miss');
    }
    expect(await commandStats()).toEqual({ mget: 10 });
    // The mark of the read that filled it: a store with it is judged as that read's would be.
    const { entry: local, mark } = await b.store.lookup('fresh');
    expect(await b.store.store('fresh', { ...local!, storedAt: Date.now() }, { tags: ['Product:1'], ttlSeconds: 90, mark })).toBe(true);

    const expired: CachedResponse = { ...jsonResponse('expired'), storedAt: Date.now() - 5000, maxAge: 1, swr: 60 };
    const { mark: expiredMark } = await a.store.lookup('expired');
    expect(await a.store.store('expired', expired, { tags: ['Product:2'], ttlSeconds: 90, mark: expiredMark })).toBe(true);
    for (let index = 0; index < 3; index += 1) {
      const lookup = await b.store.lookup('expired');
      expect([lookup.entry, lookup.localCache]).toEqual([expired, 'miss']);
      expect(isFresh(lookup.entry!, Date.now())).toBe(false);
    }
  });

  it.each([
    { purge: 'invalidate', run: (store: CacheStore) => store.invalidate(['Product:1']), after: 'gone' },
    { purge: 'invalidateAll', run: (store: CacheStore) => store.invalidateAll(), after: 'gone' },
    { purge: 'markStale', run: (store: CacheStore) => store.markStale(['Product']), after: 'stale' },
    { purge: 'markAllStale', run: (store: CacheStore) => store.markAllStale(), after: 'stale' },
  ])('$purge through replica A: the very next lookup on B does not answer the entry it held', async ({ run, after }) => {
    const { a, b } = await twoReplicas('purge');
    expect(await storeAfterMiss(a.store, 'query', 'first')).toBe(true);
    await cachedLocally(b, 'query', 'first');
    await cachedLocally(a, 'query', 'first');

    await run(a.store);
    const next = await b.store.lookup('query');
    expect(next.localCache).toBe('miss');
    if (after === 'gone') expect(next.entry).toBeUndefined();
    if (after === 'stale') expect([bodyText(next), isFresh(next.entry!, Date.now())]).toEqual(['first', false]);
    expect(a.acknowledgedPurges).toHaveLength(1);
  });

  it('a store over a fresh entry waits for no replica: B drops the entry it held when Redis tells it, then reads the new one', async () => {
    const { a, b } = await twoReplicas('restore');
    expect(await storeAfterMiss(a.store, 'query', 'first')).toBe(true);
    await cachedLocally(b, 'query', 'first');

    expect(await storeAfterMiss(a.store, 'query', 'second')).toBe(true);
    expect(a.acknowledgedPurges).toEqual([]);
    await vi.waitFor(async () => expect(bodyText(await b.store.lookup('query'))).toBe('second'), { interval: 1 });
    const held = await b.store.lookup('query');
    expect([bodyText(held), held.localCache]).toEqual(['second', 'hit']);
  });

  it("reads what it stored itself at once, before Redis's invalidation of its old record arrives", async () => {
    const { a, b } = await twoReplicas('own-store');
    expect(await storeAfterMiss(a.store, 'query', 'first')).toBe(true);
    await cachedLocally(b, 'query', 'first');
    const subscriber = proxiedConnection(b, (await connectionsOf(b)).subscriber);

    subscriber.hold();
    expect(await storeAfterMiss(b.store, 'query', 'second')).toBe(true);
    const next = await b.store.lookup('query');
    subscriber.release();
    expect([bodyText(next), next.localCache]).toEqual(['second', 'miss']);
  });

  it('returns a read answered after an invalidation that overtook it, and never keeps it', async () => {
    const { a, b } = await twoReplicas('race');
    expect(await storeAfterMiss(a.store, 'race', 'before')).toBe(true);
    const command = proxiedConnection(b, (await connectionsOf(b)).command);

    // B's read runs in Redis before A's purge, but its reply reaches B only after the purge's
    // invalidation did (on B's other connection), as Redis's docs warn it may.
    command.hold();
    const overtaken = b.store.lookup('race');
    await vi.waitFor(() => expect(command.heldBytes()).toBeGreaterThan(0), { interval: 5 });
    expect(await a.store.invalidate(['Product:1'])).toBe(1);
    command.release();

    const answered = await overtaken;
    expect([bodyText(answered), answered.localCache]).toEqual(['before', 'miss']);
    const next = await b.store.lookup('race');
    expect([next.entry, next.localCache]).toEqual([undefined, 'miss']);
  });

  it.each(['subscriber', 'command'] as const)(
    'drops everything when B loses its %s connection, and is exact again once it is back',
    async (connection) => {
      const { a, b } = await twoReplicas('loss');
      expect(await storeAfterMiss(a.store, 'query', 'first')).toBe(true);
      await cachedLocally(b, 'query', 'first');

      const killed = (await connectionsOf(b))[connection];
      await redis.inspector.client('KILL', 'ID', killed.id);
      await vi.waitFor(() => expect(b.enabled()).toBe(false), { interval: 1 });
      const meanwhile = Promise.resolve(b.store.lookup('query')).catch(() => undefined);
      expect((await meanwhile)?.localCache).not.toBe('hit');

      // Changed while B cannot hear of it: B must read Redis, not its former copy.
      expect(await storeAfterMiss(a.store, 'query', 'second')).toBe(true);
      await vi.waitFor(() => expect(b.enabled()).toBe(true), { timeout: 10_000, interval: 20 });
      await cachedLocally(b, 'query', 'second');
      expect(await a.store.invalidate(['Product:1'])).toBe(1);
      expect((await b.store.lookup('query')).entry).toBeUndefined();
    },
  );

  it('still asks for the acknowledgement of others when its own subscriber is reconnecting', async () => {
    const { a, b } = await twoReplicas('own-subscriber');
    expect(await storeAfterMiss(b.store, 'query', 'first')).toBe(true);
    await cachedLocally(b, 'query', 'first');
    const aSubscriber = parseClientList(String(await redis.inspector.client('LIST'))).find(
      (client) => client.flags.includes('P') && !b.proxy!.connections().some((connection) => connection.upstreamAddress === client.addr),
    )!;
    await redis.inspector.client('KILL', 'ID', aSubscriber.id);
    await vi.waitFor(() => expect(a.enabled()).toBe(false), { interval: 1 });

    expect(await a.store.invalidate(['Product'])).toBe(1);
    expect((await b.store.lookup('query')).entry).toBeUndefined();
  });

  it('rejects a purge that a receiver of its barrier never acknowledges, after ackTimeoutMs', async () => {
    prefixNumber += 1;
    const keyPrefix = `ack-timeout-${prefixNumber}:`;
    const a = await openReplica(keyPrefix, { localCache: { maxBytes: 1024 * 1024, ackTimeoutMs: 300 } });
    const silent = new Redis(redis.server.url);
    cleanups.push(async () => silent.disconnect());
    await silent.subscribe(new RedisKeyLayout(keyPrefix).barrierChannel());

    const started = performance.now();
    const rejection = a.store.invalidate(['Product:1']);
    await expect(rejection).rejects.toThrow('local caches did not acknowledge the purge within 300 ms (1 of 2 acknowledged)');
    // Applied in Redis, so the engine does not retry it (README, Invalidation after mutations).
    await expect(rejection).rejects.toBeInstanceOf(UnconfirmedInvalidation);
    expect(performance.now() - started).toBeGreaterThanOrEqual(295);

    await silent.unsubscribe();
    expect(await a.store.invalidate(['Product:1'])).toBe(0);
  });

  // The reload/Redis audit: Redis dropped a paused replica's subscriber (CLIENT KILL, a restart),
  // PUBLISH no longer counted it, and a purge answered true while that replica, once running again,
  // served the purged entry from its local cache.
  it('registers each serving replica until its lease ends, and fails a purge a registered replica does not acknowledge', async () => {
    const { a, b, keyPrefix } = await twoReplicas('registered', { localCache: { maxBytes: 1024 * 1024, ackTimeoutMs: 300 } });
    const replicas = new RedisKeyLayout(keyPrefix).replicasKey();
    const [seconds] = await redis.inspector.time();
    const registered = await redis.inspector.zrange(replicas, 0, -1, 'WITHSCORES');
    expect(registered).toHaveLength(4);
    for (const score of [registered[1], registered[3]]) expect(Number(score) - Number(seconds) * 1000).toBeGreaterThan(1000);

    // A replica that registered and stopped running: its subscriber is gone, its lease is not.
    await redis.inspector.zadd(replicas, Number(seconds) * 1000 + 60_000, 'paused-replica');
    const rejection = a.store.invalidate(['Product:1']);
    await expect(rejection).rejects.toThrow('registered and silent: paused-replica');
    await expect(rejection).rejects.toBeInstanceOf(UnconfirmedInvalidation);
    // Its lease ran out: it serves no more, and purges go on without it.
    await redis.inspector.zadd(replicas, Number(seconds) * 1000 - 1, 'paused-replica');
    expect(await a.store.invalidate(['Product:1'])).toBe(0);

    await b.store.close();
    await vi.waitFor(async () => expect(await redis.inspector.zrange(replicas, 0, -1)).toHaveLength(1), { interval: 20 });
  });

  // The review of the registry: Redis restarted without its data lost every registration while a
  // replica was paused, and a purge through another answered true.
  it('fails purges while a registry it saw start anew is younger than one registration', async () => {
    const { a, keyPrefix } = await twoReplicas('registry-lost', { localCache: { maxBytes: 1024 * 1024, ackTimeoutMs: 300 } });
    const layout = new RedisKeyLayout(keyPrefix);
    expect(await a.store.invalidate(['Product:1'])).toBe(0);
    const [seconds] = await redis.inspector.time();
    // What a restart leaves: the registry begun again by the first replica to register, just now.
    await redis.inspector.set(layout.registrySinceKey(), String(Number(seconds) * 1000));
    await expect(a.store.invalidate(['Product:1'])).rejects.toThrow('younger than one registration');
    await redis.inspector.set(layout.registrySinceKey(), String(Number(seconds) * 1000 - 5000));
    expect(await a.store.invalidate(['Product:1'])).toBe(0);
  });

  it('confirms a purge while another client has a pattern subscription matching its barrier channel', async () => {
    // PUBLISH counts such a client among its receivers; it never acknowledges.
    const { a, b } = await twoReplicas('pattern-subscriber', { localCache: { maxBytes: 1024 * 1024, ackTimeoutMs: 2000 } });
    const watcher = new Redis(redis.server.url);
    cleanups.push(async () => watcher.disconnect());
    await watcher.psubscribe('*');
    expect(await storeAfterMiss(b.store, 'query', 'first')).toBe(true);
    await cachedLocally(b, 'query', 'first');

    expect(await a.store.invalidate(['Product'])).toBe(1);
    expect((await b.store.lookup('query')).entry).toBeUndefined();
  });

  it('drops everything on a flush, and a shard\'s records when its epoch changes', async () => {
    const { a, b, keyPrefix } = await twoReplicas('flush');
    const layout = new RedisKeyLayout(keyPrefix);
    const keys = ['one', 'two', 'three', 'four'];
    const otherShard = keys.find((key) => layout.locate(key).shard !== layout.locate('one').shard)!;
    for (const key of keys) {
      expect(await storeAfterMiss(a.store, key, key)).toBe(true);
      await cachedLocally(b, key, key);
    }

    await redis.inspector.del(layout.epochKey(layout.locate('one').shard));
    await vi.waitFor(async () => expect((await b.store.lookup('one')).localCache).toBe('miss'), { interval: 10 });
    expect((await b.store.lookup(otherShard)).localCache).toBe('hit');

    await redis.inspector.flushall();
    await vi.waitFor(async () => expect((await b.store.lookup(otherShard)).localCache).toBe('miss'), { interval: 10 });
    expect((await b.store.lookup(otherShard)).entry).toBeUndefined();
  });

  it('stops serving once its subscriber has been silent for the lease, and reconnects it', async () => {
    const { a, b } = await twoReplicas('lease');
    expect(await storeAfterMiss(a.store, 'query', 'first')).toBe(true);
    await cachedLocally(b, 'query', 'first');
    const subscriber = (await connectionsOf(b)).subscriber;
    proxiedConnection(b, subscriber).hold();

    // The lease runs out while the connection still counts as up, a heartbeat before it is replaced.
    await vi.waitFor(async () => expect([(await b.store.lookup('query')).localCache, b.enabled()]).toEqual(['miss', true]), {
      timeout: 6000,
      interval: 100,
    });
    await vi.waitFor(() => expect(b.enabled()).toBe(false), { timeout: 3000, interval: 50 });
    await vi.waitFor(() => expect(b.enabled()).toBe(true), { timeout: 10_000, interval: 50 });
    await cachedLocally(b, 'query', 'first');
  });

  // An outside audit: a replica paused 0.56-0.6 s missed an invalidation whose mutation was answered
  // after ackTimeoutMs anyway (unconfirmed); running again, it took a lookup before the push waiting
  // on its subscriber and served the old entry, its lease of 3 s still running.
  it('serves no record once its subscriber has been silent for ackTimeoutMs, so none an unconfirmed invalidation removed', async () => {
    const { a, b } = await twoReplicas('silence', { localCache: { enabled: true, maxBytes: 1024 * 1024, ackTimeoutMs: 300 } });
    expect(await storeAfterMiss(a.store, 'query', 'first')).toBe(true);
    await cachedLocally(b, 'query', 'first');
    proxiedConnection(b, (await connectionsOf(b)).subscriber).hold();
    await expect(a.store.invalidate(['Product:1'])).rejects.toBeInstanceOf(UnconfirmedInvalidation);
    const afterwards = await b.store.lookup('query');
    expect([afterwards.entry, afterwards.localCache, b.enabled()]).toEqual([undefined, 'miss', true]);
  });

  it('is off with enabled: false: no subscriber, every lookup reads Redis, purges wait for no one', async () => {
    const { a, b, keyPrefix } = await twoReplicas('off', { localCache: { enabled: false, maxBytes: 1024 } });
    expect(await storeAfterMiss(a.store, 'query', 'first')).toBe(true);
    for (let index = 0; index < 3; index += 1) {
      const lookup: Lookup = await b.store.lookup('query');
      expect([bodyText(lookup), lookup.localCache]).toEqual(['first', undefined]);
    }
    expect(String(await redis.inspector.client('LIST'))).not.toContain('svc-cache-local-cache-');
    expect(await redis.inspector.pubsub('NUMSUB', new RedisKeyLayout(keyPrefix).barrierChannel())).toEqual([expect.any(String), 0]);
    expect(await a.store.invalidate(['Product:1'])).toBe(1);
    expect(a.acknowledgedPurges).toEqual([]);
  });

  it('keeps no more than maxBytes, the least recently used going first', async () => {
    prefixNumber += 1;
    const keyPrefix = `bound-${prefixNumber}:`;
    const a = await openReplica(keyPrefix);
    const b = await openReplica(keyPrefix, { localCache: { maxBytes: 10_000 } });
    const headers = Array.from({ length: 20 }, (_, index): [string, string] => [`x-h${index}`, 'v']);
    const large = (text: string): CachedResponse => ({ ...entry(text), body: Buffer.alloc(1000, text), identityLength: 1000, headers });
    for (const key of ['a', 'b', 'c']) {
      const { mark } = await a.store.lookup(key);
      await a.store.store(key, large(key), { tags: ['T'], ttlSeconds: 90, mark });
      await b.store.lookup(key);
    }
    // Each record is its 1,000-byte body, about 1,100 bytes more and 20 headers of about 120
    // bytes each as they are kept: two fit in 10,000 (counted without the headers' cost, four would).
    expect((await b.store.lookup('a')).localCache).toBe('miss');
    expect((await b.store.lookup('c')).localCache).toBe('hit');
  });
});
