import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postGraphQL, startDemoOrigin, type DemoOrigin, type ForcedResponse } from '../support/origin.js';
import { startRedisServer, TEST_REDIS_COMMAND_TIMEOUT_MS, type RedisServer } from '../support/redis.js';
import { startStack, type ConfigInput, type Stack, useStack } from '../support/stack.js';

/**
 * stale-if-error through the gateway (README, Stale-if-error): once an entry is past maxAge, an
 * origin 5xx or a 200 that is no GraphQL result is answered with it (HIT, `svc-cache-stale: error`,
 * its true age) while it expired less than staleIfError ago; past that the failure passes. An origin
 * that cannot be reached becomes Envoy's own 503, which never reaches svc-cache (1.36).
 */

const TOKEN = 'stale-if-error-token-0123456789';
const DEBUG = { 'svc-debug': '1', 'svc-purge-token': TOKEN };
const TIME = { query: '{ time }' };
/** Its rule keeps it 10 s for swr but serves it for a failing origin only 1 s past expiry. */
const USERS = { query: '{ users { id name } }' };

const RULES: ConfigInput = {
  purge: { tokens: [TOKEN] },
  rules: [
    { description: 'time', types: { Query: ['time'] }, maxAge: 1, staleIfError: 2 },
    { description: 'users', types: { Query: ['users'] }, maxAge: 1, swr: 10, staleIfError: 1 },
    { description: 'todos', types: { Query: ['todos'] }, maxAge: 600, swr: 30, staleIfError: 600 },
  ],
};

const SERVICE_UNAVAILABLE: ForcedResponse = { status: 503, headers: { 'content-type': 'text/plain' }, body: 'Service Unavailable' };
const INTERNAL_ERROR: ForcedResponse = { status: 500, headers: { 'content-type': 'text/plain' }, body: 'Internal Server Error' };
const MAINTENANCE_PAGE: ForcedResponse = { status: 200, headers: { 'content-type': 'text/html' }, body: '<h1>Back soon</h1>' };
const NOT_A_RESULT: ForcedResponse = { status: 200, headers: { 'content-type': 'application/json' }, body: '{"message":"upstream busy"}' };
const GRAPHQL_ERRORS: ForcedResponse = { status: 200, headers: { 'content-type': 'application/json' }, body: '{"errors":[{"message":"resolver failed"}]}' };

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The headers svc-cache and the gateway decide: less `date`, `connection` and `keep-alive`, which are Node's. */
function decidedHeaders(headers: Record<string, string>): Record<string, string> {
  const { date: _date, connection: _connection, 'keep-alive': _keepAlive, ...rest } = headers;
  return rest;
}

describe.each([
  ['memory', async () => ({ input: RULES, stop: async () => undefined })],
  [
    'Redis',
    async () => {
      const redis: RedisServer = await startRedisServer();
      const input: ConfigInput = { ...RULES, redis: { url: redis.url, commandTimeoutMs: TEST_REDIS_COMMAND_TIMEOUT_MS } };
      return { input, stop: () => redis.stop() };
    },
  ],
])('stale-if-error with the %s store', (_name, setUp) => {
  let input: ConfigInput;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    ({ input, stop } = await setUp());
  });
  afterAll(async () => {
    await stop?.();
  });
  const stack = useStack(() => input, { freshEachTest: false });

  it('answers failures with the expired entry within staleIfError, relays GraphQL errors, and lets failures pass past it', async () => {
    const sentAt = Date.now();
    const time = await postGraphQL(stack().url, TIME);
    const users = await postGraphQL(stack().url, USERS);
    expect([time.headers['svc-cache'], users.headers['svc-cache']]).toEqual(['MISS', 'MISS']);
    const primedAt = Date.now();
    await sleep(1100);

    for (const failure of [INTERNAL_ERROR, MAINTENANCE_PAGE, NOT_A_RESULT]) {
      stack().origin.setBehaviour({ forcedResponse: failure });
      const before = stack().origin.requestCount();
      const askedAt = Date.now();
      const stale = await postGraphQL(stack().url, TIME);
      // The origin was asked, failed, and the client got the stored answer in its place.
      expect(stack().origin.requestCount()).toBe(before + 1);
      expect([stale.status, stale.text]).toEqual([200, time.text]);
      expect(decidedHeaders(stale.headers)).toEqual({
        'content-type': 'application/json; charset=utf-8',
        'content-length': String(time.text.length),
        'svc-cache-stale': 'error',
        'svc-cache': 'HIT',
        age: expect.stringMatching(/^\d+$/),
        server: 'envoy',
      });
      // The true age: seconds since the entry was stored, between the request that stored it and now.
      const age = Number(stale.headers['age']);
      expect(age).toBeGreaterThanOrEqual(Math.floor((askedAt - primedAt) / 1000));
      expect(age).toBeLessThanOrEqual(Math.floor((Date.now() - sentAt) / 1000));
    }
    const counted = await stack().sidecar.metrics.registry.getSingleMetricAsString('svc_cache_stale_if_error_total');
    expect(counted).toContain('svc_cache_stale_if_error_total{failure="origin-status"} 1');
    expect(counted).toContain('svc_cache_stale_if_error_total{failure="origin-not-graphql"} 2');

    // A GraphQL result with errors is the origin answering: relayed, nothing stale.
    stack().origin.setBehaviour({ forcedResponse: GRAPHQL_ERRORS });
    const errors = await postGraphQL(stack().url, TIME, DEBUG);
    expect([errors.status, errors.text, errors.headers['svc-cache'], errors.headers['svc-debug-pass-reason']]).toEqual([
      200,
      GRAPHQL_ERRORS.body,
      'PASS',
      'response-has-errors',
    ]);

    // users: 1 s past expiry its window is over, though swr keeps it in the store.
    await sleep(Math.max(0, primedAt + 2100 - Date.now()));
    stack().origin.setBehaviour({ forcedResponse: INTERNAL_ERROR });
    const failed = await postGraphQL(stack().url, USERS, DEBUG);
    expect([failed.status, failed.text, failed.headers['svc-cache'], failed.headers['svc-debug-pass-reason']]).toEqual([
      500,
      'Internal Server Error',
      'PASS',
      'origin-status',
    ]);
    expect(failed.headers['svc-cache-stale']).toBeUndefined();

    // time is still within its window; a good answer refreshes it.
    stack().origin.setBehaviour({ forcedResponse: null });
    const refreshed = await postGraphQL(stack().url, TIME);
    expect([refreshed.headers['svc-cache'], refreshed.headers['svc-cache-stale']]).toEqual(['MISS', undefined]);
    expect(refreshed.text).not.toBe(time.text);
  });

  it("honours a purge made while the origin was asked: a hard one relays the origin's failure, a soft one still serves the entry", async () => {
    const HARD_PURGE = 'mutation { _purgeQuery(queries: [time]) }';
    /** TIME stored anew, expired, and asked of an origin that fails after 500 ms, with `purge` sent once it is asked. */
    async function failingWhilePurged(purge: string) {
      stack().origin.setBehaviour({ forcedResponse: null, delayMs: 0 });
      await postGraphQL(stack().url, { query: HARD_PURGE }, DEBUG);
      const primed = await postGraphQL(stack().url, TIME);
      expect(primed.headers['svc-cache']).toBe('MISS');
      await sleep(1100);
      stack().origin.setBehaviour({ forcedResponse: INTERNAL_ERROR, delayMs: 500 });
      const asked = stack().origin.requestCount() + 1;
      const pending = postGraphQL(stack().url, TIME, DEBUG);
      while (stack().origin.requestCount() < asked) await sleep(10);
      const purged = await postGraphQL(stack().url, { query: purge }, DEBUG);
      expect(purged.text).toBe('{"data":{"_purgeQuery":true}}');
      return { primed, answer: await pending };
    }

    const hard = await failingWhilePurged(HARD_PURGE);
    expect([hard.answer.status, hard.answer.text, hard.answer.headers['svc-cache'], hard.answer.headers['svc-debug-pass-reason']]).toEqual([
      500,
      'Internal Server Error',
      'PASS',
      'origin-status',
    ]);
    expect(hard.answer.headers['svc-cache-stale']).toBeUndefined();

    const soft = await failingWhilePurged('mutation { _purgeQuery(queries: [time], soft: true) }');
    expect([soft.answer.status, soft.answer.text, soft.answer.headers['svc-cache'], soft.answer.headers['svc-cache-stale']]).toEqual([
      200,
      soft.primed.text,
      'HIT',
      'error',
    ]);
    stack().origin.setBehaviour({ forcedResponse: null, delayMs: 0 });
  });

  /** Todos under its own alias, so that each is its own entry, stored with the origin's `cache-control`. */
  async function primeTodos(alias: string, cacheControl: string) {
    stack().origin.setBehaviour({ headers: { 'cache-control': cacheControl }, forcedResponse: null });
    const params = { query: `{ ${alias}: todos { id } }` };
    const primed = await postGraphQL(stack().url, params);
    expect(primed.headers['svc-cache']).toBe('MISS');
    return { params, primed };
  }

  async function expectFailureRelayed(params: { query: string }) {
    const failed = await postGraphQL(stack().url, params, DEBUG);
    expect([failed.status, failed.text, failed.headers['svc-cache'], failed.headers['svc-debug-pass-reason'], failed.headers['svc-cache-stale']]).toEqual([
      503,
      'Service Unavailable',
      'PASS',
      'origin-status',
      undefined,
    ]);
  }

  it("relays the failure for an answer the origin forbade serving stale, whatever the rules' staleIfError", async () => {
    const forbidden = [];
    for (const [alias, cacheControl] of [
      ['mustRevalidate', 'max-age=1, must-revalidate'],
      ['proxyRevalidate', 'max-age=1, proxy-revalidate'],
      ['sMaxAge', 's-maxage=1'],
      ['noStaleIfError', 'max-age=1, stale-if-error=0'],
    ] as const) {
      forbidden.push((await primeTodos(alias, cacheControl)).params);
    }
    const allowed = await primeTodos('maxAge', 'max-age=1');
    await sleep(1100);
    stack().origin.setBehaviour({ headers: {}, forcedResponse: SERVICE_UNAVAILABLE });

    for (const params of forbidden) await expectFailureRelayed(params);
    // Without such a directive the rules' window holds.
    const stale = await postGraphQL(stack().url, allowed.params);
    expect([stale.status, stale.text]).toEqual([200, allowed.primed.text]);
    expect(decidedHeaders(stale.headers)).toEqual({
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(allowed.primed.text.length),
      'cache-control': 'max-age=1',
      'svc-cache-stale': 'error',
      'svc-cache': 'HIT',
      age: expect.stringMatching(/^[12]$/),
      server: 'envoy',
    });
    stack().origin.setBehaviour({ forcedResponse: null });
  });

  it('relays the failure for a soft-purged answer the origin sent with must-revalidate', async () => {
    const { params } = await primeTodos('softPurged', 'max-age=600, must-revalidate');
    const purged = await postGraphQL(stack().url, { query: 'mutation { _purgeQuery(queries: [todos], soft: true) }' }, DEBUG);
    expect(purged.text).toBe('{"data":{"_purgeQuery":true}}');
    stack().origin.setBehaviour({ headers: {}, forcedResponse: SERVICE_UNAVAILABLE });

    await expectFailureRelayed(params);
    stack().origin.setBehaviour({ forcedResponse: null });
  });
});

describe('stale-if-error and an origin that cannot be reached', () => {
  let origin: DemoOrigin;
  let stack: Stack;

  beforeAll(async () => {
    origin = await startDemoOrigin({ port: 0 });
    stack = await startStack(RULES, { origin });
  });
  afterAll(async () => {
    await stack.close();
    await origin.close();
  });

  it("gets Envoy's own 503: local replies skip ext_proc in 1.36, so svc-cache never sees the failure", async () => {
    expect((await postGraphQL(stack.url, TIME)).headers['svc-cache']).toBe('MISS');
    await sleep(1100);
    await origin.close();

    const refused = await postGraphQL(stack.url, TIME);

    expect(refused.status).toBe(503);
    expect(refused.text).toBe(
      'upstream connect error or disconnect/reset before headers. reset reason: remote connection failure, ' +
        'transport failure reason: delayed connect error: Connection refused',
    );
    expect(refused.headers['svc-cache']).toBeUndefined();
    expect(refused.headers['svc-cache-stale']).toBeUndefined();
  });
});
