import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { postGraphQL, type GraphQLHttpResult } from '../support/origin.js';
import { startRedisServer, TEST_REDIS_COMMAND_TIMEOUT_MS, type RedisServer } from '../support/redis.js';
import { startReplicasSharingRedis, type Replicas } from '../support/replicas.js';
import { postGraphQLRaw } from '../support/rawHttp.js';
import { type ConfigInput, type Stack, useStack } from '../support/stack.js';

/**
 * Soft purges (`soft: true`), Stellate's `_purgeType` and purges written with empty parentheses,
 * through the gateway, with the in-memory store and with Redis (README, Purge API).
 */

const TOKEN = 'test-purge-token-soft-0123456789';
const MAX_AGE = 60;
const CONFIG: ConfigInput = {
  purge: { tokens: [TOKEN] },
  keyFields: { defaults: ['id'], types: { Product: ['sku'] } },
  rules: [
    { types: { Query: ['time'] }, maxAge: MAX_AGE, swr: 30 },
    { types: { Query: ['users'] }, maxAge: MAX_AGE, swr: 2 },
    { types: { Query: ['todos', 'todo', 'product'] }, maxAge: MAX_AGE, swr: 0 },
  ],
  // Past swr a request does not wait for another's refresh: it is a MISS of its own.
  cache: { coalesceWaitMs: 0 },
};
const TIME = { query: '{ time }' };
const USERS = { query: '{ users { name } }' };
const TODOS = { query: '{ todos { id title } }' };

const purge = (url: string, mutation: string, token: string | null = TOKEN) =>
  postGraphQL(url, { query: mutation }, token === null ? {} : { 'svc-purge-token': token });

async function cacheStatus(url: string, params: { query: string }): Promise<string | undefined> {
  return (await postGraphQL(url, params)).headers['svc-cache'];
}

/** A request that reaches the origin while it answers slowly, and one sent meanwhile. */
async function refreshWithOneMeanwhile(
  stack: Stack,
  params: { query: string },
  meanwhileUrl = stack.url,
): Promise<{ refreshed: GraphQLHttpResult<unknown>; meanwhile: GraphQLHttpResult<unknown>; originRequests: number }> {
  stack.origin.setBehaviour({ delayMs: 500 });
  const before = stack.origin.requestCount();
  try {
    const refreshing = postGraphQL(stack.url, params);
    await vi.waitFor(() => expect(stack.origin.requestCount()).toBe(before + 1), { timeout: 5000, interval: 5 });
    const meanwhile = await postGraphQL(meanwhileUrl, params);
    const refreshed = await refreshing;
    return { refreshed, meanwhile, originRequests: stack.origin.requestCount() - before };
  } finally {
    stack.origin.setBehaviour({ delayMs: 0 });
  }
}

describe.each(['memory', 'redis'] as const)('soft purges, %s store', (storeKind) => {
  let redis: RedisServer | undefined;

  beforeAll(async () => {
    redis = storeKind === 'redis' ? await startRedisServer() : undefined;
  });
  afterAll(async () => {
    await redis?.stop();
  });
  const stack = useStack(() => (redis ? { ...CONFIG, redis: { url: redis.url, commandTimeoutMs: TEST_REDIS_COMMAND_TIMEOUT_MS } } : CONFIG), {
    freshEachTest: false,
  });
  beforeEach(async () => {
    await stack().sidecar.store.invalidateAll();
  });

  it('serves the stale answer (age past max-age) while one request refreshes it, then the fresh one', async () => {
    const first = await postGraphQL(stack().url, TIME);
    expect(first.headers['svc-cache']).toBe('MISS');
    expect(await cacheStatus(stack().url, TIME)).toBe('HIT');

    const purged = await purge(stack().url, 'mutation { _purgeQuery(queries: [time], soft: true) }');
    expect([purged.status, purged.text]).toEqual([200, '{"data":{"_purgeQuery":true}}']);

    const { refreshed, meanwhile, originRequests } = await refreshWithOneMeanwhile(stack(), TIME);
    expect([meanwhile.headers['svc-cache'], meanwhile.text]).toEqual(['HIT', first.text]);
    expect(Number(meanwhile.headers['age'])).toBeGreaterThan(MAX_AGE);
    expect(refreshed.headers['svc-cache']).toBe('MISS');
    expect(refreshed.text).not.toBe(first.text);
    expect(originRequests).toBe(1);

    const after = await postGraphQL(stack().url, TIME);
    expect([after.headers['svc-cache'], after.text]).toEqual(['HIT', refreshed.text]);
    expect(Number(after.headers['age'])).toBeLessThan(MAX_AGE);
  });

  it('is a MISS once the swr window has passed, and at once for an entry without swr', async () => {
    expect(await cacheStatus(stack().url, USERS)).toBe('MISS');
    expect(await cacheStatus(stack().url, TODOS)).toBe('MISS');
    const purged = await purge(stack().url, 'mutation { _purgeUser(soft: true) _purgeTodo() }');
    expect(purged.text).toBe('{"data":{"_purgeUser":true,"_purgeTodo":true}}');
    expect(await cacheStatus(stack().url, TODOS)).toBe('MISS');

    // swr 2: stale for the second after the purge that the margin leaves (src/store/softPurge.ts).
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const { refreshed, meanwhile } = await refreshWithOneMeanwhile(stack(), USERS);
    expect(refreshed.headers['svc-cache']).toBe('MISS');
    expect(meanwhile.headers['svc-cache']).toBe('MISS');
  });

  it('never stores as fresh an answer fetched before the soft purge', async () => {
    stack().origin.setBehaviour({ delayMs: 500 });
    const before = stack().origin.requestCount();
    const fetching = postGraphQL(stack().url, TIME, { 'svc-debug': '1', 'svc-purge-token': TOKEN });
    await vi.waitFor(() => expect(stack().origin.requestCount()).toBe(before + 1), { timeout: 5000, interval: 5 });
    expect((await purge(stack().url, 'mutation { _purgeAll(soft: true) }')).text).toBe('{"data":{"_purgeAll":true}}');
    const fetchedBefore = await fetching;
    stack().origin.setBehaviour({ delayMs: 0 });

    expect(fetchedBefore.headers['svc-cache']).toBe('PASS');
    expect(fetchedBefore.headers['svc-debug-pass-reason']).toBe('invalidated-meanwhile');
    expect(await cacheStatus(stack().url, TIME)).toBe('MISS');
    expect(await cacheStatus(stack().url, TIME)).toBe('HIT');
  });

  it('answers Stellate\'s _purgeType, and _purgeAll(soft: true) for every entry', async () => {
    const product = { query: '{ product(sku: "sku-1") { name } }' };
    for (const params of [TIME, TODOS, product]) expect(await cacheStatus(stack().url, params)).toBe('MISS');
    const byKey = await purge(stack().url, 'mutation { _purgeType(type: "Product", keyFields: [{ name: "sku", value: "sku-1" }]) }');
    expect(byKey.text).toBe('{"data":{"_purgeType":true}}');
    expect(await cacheStatus(stack().url, product)).toBe('MISS');
    expect(await cacheStatus(stack().url, TODOS)).toBe('HIT');

    const unknown = await purge(stack().url, 'mutation { _purgeType(type: "Nope") }');
    expect([unknown.status, unknown.text]).toEqual([
      200,
      '{"errors":[{"message":"_purgeType: \\"Nope\\" is not an object type of the origin schema","extensions":{"code":"BAD_USER_INPUT"}}]}',
    ]);

    const first = await postGraphQL(stack().url, TIME);
    expect((await purge(stack().url, 'mutation { _purgeAll(soft: true) }')).status).toBe(200);
    const stale = await refreshWithOneMeanwhile(stack(), TIME);
    expect([stale.meanwhile.headers['svc-cache'], stale.meanwhile.text]).toEqual(['HIT', first.text]);
    expect(await cacheStatus(stack().url, TODOS)).toBe('MISS');
  });
});

describe('purge fields written with empty parentheses', () => {
  const stack = useStack(CONFIG, { freshEachTest: false });

  it('answers _purgeTodo() exactly as _purgeTodo, so the next query is a MISS', async () => {
    await cacheStatus(stack().url, TODOS);
    expect(await cacheStatus(stack().url, TODOS)).toBe('HIT');
    stack().origin.reset();
    const purged = await postGraphQLRaw(stack().url, { query: 'mutation { _purgeTodo() }' }, [['svc-purge-token', TOKEN]]);
    const plain = await postGraphQLRaw(stack().url, { query: 'mutation { _purgeTodo }' }, [['svc-purge-token', TOKEN]]);
    expect([purged.status, purged.headers['content-type'], purged.headers['svc-cache'], purged.text]).toEqual([
      plain.status,
      plain.headers['content-type'],
      'PASS',
      '{"data":{"_purgeTodo":true}}',
    ]);
    expect(stack().origin.requestCount()).toBe(0);
    expect(await cacheStatus(stack().url, TODOS)).toBe('MISS');
    const several = await purge(stack().url, '# a comment ()\nmutation Purge { a: _purgeAll ( ) purgeTodo(id: "1") b: purgeUser() }');
    expect(several.text).toBe('{"data":{"a":true,"purgeTodo":true,"b":true}}');
  });

  it('sends the request on to the origin unchanged without a valid token, or when it is no purge', async () => {
    await cacheStatus(stack().url, TODOS);
    const notPurges: Array<[string, string | null]> = [
      ['mutation { _purgeTodo() }', null],
      ['mutation { _purgeTodo() }', 'wrong-token'],
      ['mutation { _purgeTodo() addTodo(title: "x") { id } }', TOKEN],
      ['mutation { addTodo() { id } }', TOKEN],
      ['{ todos() { id } }', TOKEN],
    ];
    for (const [query, token] of notPurges) {
      stack().origin.reset();
      const response = await purge(stack().url, query, token);
      expect(response.headers['svc-cache'], query).toBe('PASS');
      expect(stack().origin.requests.map((request) => JSON.parse(request.body).query), query).toEqual([query]);
      expect(response.json?.errors?.[0]?.message, query).toMatch(/^Syntax Error/);
    }
    expect(await cacheStatus(stack().url, TODOS)).toBe('HIT');
  });
});

describe('a soft purge through one of two replicas sharing Redis', () => {
  let replicas: Replicas;

  beforeAll(async () => {
    replicas = await startReplicasSharingRedis(CONFIG);
  });
  afterAll(async () => {
    await replicas.close();
  });

  /** Replicas serve one site: their requests name the same host, whichever replica's port they reach. */
  const throughSite = (url: string, params: { query: string }) => postGraphQLRaw(url, params, [['host', 'app.test']]);

  it('makes the entry stale for both: each refreshes it once while others get the stale answer', async () => {
    const { replicaA, replicaB } = replicas;
    const first = await throughSite(replicaA.url, TIME);
    expect(first.headers['svc-cache']).toBe('MISS');
    expect((await throughSite(replicaB.url, TIME)).headers['svc-cache']).toBe('HIT');

    const purged = await postGraphQLRaw(replicaA.url, { query: 'mutation { _purgeQuery(queries: [time], soft: true) }' }, [
      ['host', 'app.test'],
      ['svc-purge-token', TOKEN],
    ]);
    expect(purged.text).toBe('{"data":{"_purgeQuery":true}}');

    replicas.origin.setBehaviour({ delayMs: 500 });
    const before = replicas.origin.requestCount();
    try {
      const refreshing = throughSite(replicaB.url, TIME);
      await vi.waitFor(() => expect(replicas.origin.requestCount()).toBe(before + 1), { timeout: 5000, interval: 5 });
      const meanwhile = await throughSite(replicaB.url, TIME);
      expect([meanwhile.headers['svc-cache'], meanwhile.text]).toEqual(['HIT', first.text]);
      expect(Number(meanwhile.headers['age'])).toBeGreaterThan(MAX_AGE);
      const refreshed = await refreshing;
      expect(refreshed.headers['svc-cache']).toBe('MISS');
      replicas.origin.setBehaviour({ delayMs: 0 });
      const onA = await throughSite(replicaA.url, TIME);
      expect([onA.headers['svc-cache'], onA.text]).toEqual(['HIT', refreshed.text]);
    } finally {
      replicas.origin.setBehaviour({ delayMs: 0 });
    }
  });
});
