import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createStore, type CacheStore, type InvalidationMark } from '../../src/store/index.js';
import { startRedisServer, type RedisServer } from '../support/redis.js';
import { startTcpProxy, type ProxiedConnection, type TcpProxy } from '../support/tcpProxy.js';
import { RedisKeyLayout } from '../../src/store/redisLayout.js';
import { jsonResponse, sleep, untilReady } from './contract.js';

const COMMAND_TIMEOUT_MS = 200;

let server: RedisServer;
let store: CacheStore;

beforeAll(async () => {
  server = await startRedisServer();
});

afterAll(async () => {
  await server?.stop();
});

// The replica-local cache off: these tests watch Redis's commands fail. With it, a lookup made in
// the turn Redis died may still be answered from the local copy, before the connection's close is
// seen (README, The replica-local cache; test/store/redisLocalCache.test.ts tests that cache).
beforeEach(async () => {
  store = await untilReady(
    createStore(
      { url: server.url, keyPrefix: 'faults:', commandTimeoutMs: COMMAND_TIMEOUT_MS, localCache: { enabled: false, maxBytes: 0 } },
      { memoryMaxBytes: 0 },
    ),
  );
});

afterEach(async () => {
  await store.close();
});

/** Every store operation, each expected to reject while Redis cannot answer. */
function everyOperation(mark: InvalidationMark): Array<[string, () => Promise<unknown>]> {
  return [
    ['lookup', async () => store.lookup('query')],
    ['store', () => store.store('query', jsonResponse('x'), { tags: ['A'], ttlSeconds: 60, mark })],
    ['invalidate', () => store.invalidate(['A'])],
    ['invalidateAll', () => store.invalidateAll()],
    ['ping', () => store.ping()],
  ];
}

async function expectEveryOperationToRejectWithin(limitMs: number, mark: InvalidationMark): Promise<void> {
  const outcomes = await Promise.all(
    everyOperation(mark).map(async ([name, operation]) => {
      const started = performance.now();
      const outcome = await operation().then(
        () => 'resolved',
        () => 'rejected',
      );
      return { name, outcome, fastEnough: performance.now() - started < limitMs };
    }),
  );
  expect(outcomes).toEqual(outcomes.map(({ name }) => ({ name, outcome: 'rejected', fastEnough: true })));
}


/** A store whose connections go through a TCP proxy, so that a test can hold back Redis's replies on one. */
async function throughProxy(keyPrefix: string, use: (store: CacheStore, proxy: TcpProxy) => Promise<void>): Promise<void> {
  const proxy = await startTcpProxy(server.port);
  const store = await untilReady(createStore({ url: `redis://127.0.0.1:${proxy.port}`, keyPrefix, commandTimeoutMs: COMMAND_TIMEOUT_MS }, { memoryMaxBytes: 0 }));
  try {
    await use(store, proxy);
  } finally {
    await store.close();
    await proxy.close();
  }
}

describe('Redis store faults', () => {
  it('fails fast while Redis is down and resumes by itself when it is back on the same port', async () => {
    const { mark } = await store.lookup('query');
    expect(await store.store('query', jsonResponse('before'), { tags: ['A'], ttlSeconds: 60, mark })).toBe(true);

    const missed = await store.lookup('query');
    await server.kill();
    try {
      await expectEveryOperationToRejectWithin(COMMAND_TIMEOUT_MS + 150, missed.mark);
    } finally {
      await server.restart();
    }

    await vi.waitFor(() => store.lookup('query'), { timeout: 5000, interval: 50 });
    const afterRestart = await store.lookup('query');
    expect(afterRestart.entry).toBeUndefined();
    expect(await store.store('query', jsonResponse('after'), { tags: ['A'], ttlSeconds: 60, mark: afterRestart.mark })).toBe(true);
    expect((await store.lookup('query')).entry?.body.toString()).toBe('after');
    expect(await store.invalidate(['A'])).toBe(1);
  });

  // ioredis's own words ("Stream isn't writeable and enableOfflineQueue options is false") reached
  // the logs of every failed operation while Redis was down (a new user's run).
  it('says that Redis is not connected, and why, for an operation refused while it is down', async () => {
    await server.kill();
    try {
      await vi.waitFor(() => expect(store.invalidate(['A'])).rejects.toThrow(/^redis is not connected: connect ECONNREFUSED 127\.0\.0\.1:\d+$/), {
        timeout: 5000,
        interval: 50,
      });
      await expect(store.lookup('query')).rejects.toThrow(/^redis is not connected: connect ECONNREFUSED/);
    } finally {
      await server.restart();
    }
  });

  it('bounds every call by the command timeout when Redis is slow', async () => {
    const { mark } = await store.lookup('query');
    const admin = new Redis(server.url);
    try {
      await admin.client('PAUSE', 1000, 'ALL');
      await expectEveryOperationToRejectWithin(COMMAND_TIMEOUT_MS + 150, mark);
    } finally {
      await sleep(1000);
      admin.disconnect();
    }
    await vi.waitFor(() => store.ping(), { timeout: 5000, interval: 50 });
  });

  it('closes a connection whose Redis stopped answering, so that timed-out commands are not kept, and reconnects', async () => {
    // A stalled Redis (SIGSTOP, a network black hole) keeps the connection open and answers
    // nothing: ioredis keeps every command that timed out until a reply comes, one per request.
    await throughProxy('faults:', async (stalled, proxy) => {
      await stalled.lookup('query');
      const [first] = proxy.connections();
      const connectionsBefore = proxy.connections().length;
      first!.hold();
      const lookups = await Promise.allSettled(Array.from({ length: 50 }, () => stalled.lookup('query')));
      expect(lookups.every(({ status }) => status === 'rejected')).toBe(true);
      // Only timeouts for 4 command timeouts (at least 1 s) close the held connection, and the
      // store serves again from a new one although the first never answers.
      await vi.waitFor(() => stalled.lookup('query'), { timeout: 6000, interval: 100 });
      expect(proxy.connections().length).toBe(connectionsBefore + 1);
      expect(first!.heldBytes()).toBeGreaterThan(0);
    });
  });

  it('does not send the commands that timed out on a stalled connection again on the new one', async () => {
    // Each reached Redis once; ioredis would resend every command left unanswered once it
    // reconnects (autoResendUnfulfilledCommands), long after its caller went on without it.
    const keyPrefix = 'resend:';
    await throughProxy(keyPrefix, async (stalled, proxy) => {
      const layout = new RedisKeyLayout(keyPrefix);
      const heldKey = layout.entryKey(layout.locate('held'));
      const lookupsOfHeldKey = (connection: ProxiedConnection) => connection.sentText().split(heldKey).length - 1;
      const [first] = proxy.connections();
      const connectionsBefore = proxy.connections().length;
      first!.hold();
      const lookups = await Promise.allSettled(Array.from({ length: 20 }, () => stalled.lookup('held')));
      expect(lookups.every(({ status }) => status === 'rejected')).toBe(true);
      await vi.waitFor(() => stalled.lookup('other'), { timeout: 6000, interval: 100 });
      expect(proxy.connections().length).toBe(connectionsBefore + 1);
      await sleep(300);
      expect([lookupsOfHeldKey(first!), lookupsOfHeldKey(proxy.connections().at(-1)!)]).toEqual([20, 0]);
    });
  });

  it('does not answer ping before a connection exists', async () => {
    const unreachable = createStore(
      { url: 'redis://127.0.0.1:1', keyPrefix: 'faults:', commandTimeoutMs: COMMAND_TIMEOUT_MS },
      { memoryMaxBytes: 0 },
    );
    const started = performance.now();
    await expect(unreachable.ping()).rejects.toThrow();
    await expect(unreachable.lookup('query')).rejects.toThrow();
    expect(performance.now() - started).toBeLessThan(COMMAND_TIMEOUT_MS + 150);
    await unreachable.close();
  });
});
