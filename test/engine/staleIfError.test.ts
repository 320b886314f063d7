import { buildSchema } from 'graphql';
import { pino } from 'pino';
import { beforeEach, describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { DecisionEngine, type OriginFailure } from '../../src/engine/engine.js';
import { retentionSeconds } from '../../src/engine/responseStages.js';
import { failureByHead, isGraphQLResult } from '../../src/engine/staleIfError.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { StoreOptions } from '../../src/store/index.js';
import { unitEngineDependencies } from '../support/engineDependencies.js';
import { demoSchemaSDL } from '../support/origin.js';

/**
 * stale-if-error in the engine alone (README, Stale-if-error), on a controllable clock: a MISS holds
 * the expired entry its lookup found, and the origin's failure is answered with it.
 */

const schema = buildSchema(demoSchemaSDL);
const STORED = Buffer.from('{"data":{"todos":[{"id":"1"}]}}');
const JSON_TYPE: [string, string] = ['content-type', 'application/json'];
const HTML_TYPE: [string, string] = ['content-type', 'text/html'];
const T0 = 1_700_000_000_000;

interface OriginAnswer {
  status: number;
  headers?: Array<[string, string]>;
  /** Absent: the headers end the response. */
  body?: Buffer;
}

describe('stale-if-error in the engine', () => {
  let now: number;
  let engine: DecisionEngine;
  let ttls: number[];
  let reported: OriginFailure[];
  let logged: Array<Record<string, unknown>>;
  let store: MemoryStore;
  /** The keys entries were stored under, in order. */
  let storedKeys: string[];

  function build(rules: unknown[]): void {
    const config = configSchema.parse({ origin: { url: 'http://origin.test/graphql' }, rules });
    store = new MemoryStore({ maxBytes: 1024 * 1024 });
    const storeEntry = store.store.bind(store);
    store.store = (key, response, options: StoreOptions) => {
      ttls.push(options.ttlSeconds);
      storedKeys.push(key);
      return storeEntry(key, response, options);
    };
    const events = { persistedQuery: () => undefined, purge: () => undefined, invalidation: () => undefined, coalesced: () => undefined };
    const staleIfError = (failure: OriginFailure) => void reported.push(failure);
    const logger = pino({ level: 'info', base: undefined, timestamp: false }, { write: (line: string) => void logged.push(JSON.parse(line) as Record<string, unknown>) });
    engine = new DecisionEngine(unitEngineDependencies(() => ({ config, schema }), store, () => now, { events: { ...events, staleIfError }, logger }));
  }

  /** One request through the engine's four phases, the origin answering `origin` if asked; `beforeOrigin` runs while it is away. */
  async function exchange(origin: OriginAnswer, beforeOrigin: () => unknown = () => undefined) {
    const body = Buffer.from('{"query":"{ todos { id } }"}');
    const head = { method: 'POST', path: '/graphql', headers: [[':method', 'POST'], [':path', '/graphql'], JSON_TYPE] as Array<[string, string]>, hasBody: true };
    const current = engine.begin(head);
    const request = await engine.requestBody(current, body);
    if (request.kind === 'respond') return { answeredBy: 'request' as const, response: request.response, outcome: current.summary().outcome };
    await beforeOrigin();
    const headers: Array<[string, string]> = [[':status', String(origin.status)], ...(origin.headers ?? [JSON_TYPE])];
    const responseHead = await engine.responseHead(current, origin.status, headers, origin.body === undefined);
    if (responseHead.replacement) return { answeredBy: 'response-headers' as const, response: responseHead.replacement, outcome: current.summary().outcome };
    if (!responseHead.wantsBody || origin.body === undefined) return { answeredBy: 'origin' as const, headers: responseHead.headers.set, outcome: current.summary().outcome };
    const responseBody = await engine.responseBody(current, origin.body);
    if (responseBody.replacement) return { answeredBy: 'response-body' as const, response: responseBody.replacement, outcome: current.summary().outcome };
    return { answeredBy: 'origin' as const, headers: responseBody.headers.set, outcome: current.summary().outcome };
  }

  const stale = (age: number) => ({
    status: 200,
    headers: [JSON_TYPE, ['svc-cache-stale', 'error'], ['svc-cache', 'HIT'], ['age', String(age)]],
    body: STORED,
  });

  beforeEach(() => {
    now = T0;
    ttls = [];
    storedKeys = [];
    reported = [];
    logged = [];
    build([{ types: ['Query'], maxAge: 10, swr: 5, staleIfError: 30 }]);
  });

  it('keeps entries maxAge + max(swr, staleIfError) in the store', async () => {
    expect((await exchange({ status: 200, body: STORED })).outcome).toBe('MISS');
    expect(ttls).toEqual([40]);
    expect(retentionSeconds({ maxAge: 10, swr: 50, staleIfError: 30 })).toBe(60);
  });

  it('answers a 5xx with the expired entry, its true age and svc-cache-stale: error, at the response headers', async () => {
    await exchange({ status: 200, body: STORED });
    now = T0 + 25_000;
    expect(await exchange({ status: 503, headers: [HTML_TYPE], body: Buffer.from('<h1>down</h1>') })).toEqual({
      answeredBy: 'response-headers',
      response: stale(25),
      outcome: 'HIT',
    });
    // A 500 without a body is as much a failure.
    expect((await exchange({ status: 500 })).answeredBy).toBe('response-headers');
    expect(reported).toEqual(['origin-status', 'origin-status']);
    expect(logged.filter((line) => 'staleIfError' in line)).toEqual([
      { level: 30, staleIfError: 'origin-status', originStatus: 503, ageSeconds: 25, msg: 'origin failed; answered with the stale entry' },
      { level: 30, staleIfError: 'origin-status', originStatus: 500, ageSeconds: 25, msg: 'origin failed; answered with the stale entry' },
    ]);
  });

  it('answers a 200 that is no GraphQL result: other content types at the headers, unreadable JSON at the body', async () => {
    await exchange({ status: 200, body: STORED });
    now = T0 + 11_000;
    expect(await exchange({ status: 200, headers: [HTML_TYPE], body: Buffer.from('<h1>maintenance</h1>') })).toMatchObject({ answeredBy: 'response-headers', response: stale(11) });
    expect(await exchange({ status: 200, body: Buffer.from('{"message":"busy"}') })).toMatchObject({ answeredBy: 'response-body', response: stale(11) });
    expect(await exchange({ status: 200, body: Buffer.from('<html>') })).toMatchObject({ answeredBy: 'response-body', response: stale(11) });
    expect(await exchange({ status: 200 })).toMatchObject({ answeredBy: 'response-headers', response: stale(11) });
    expect(reported).toEqual(['origin-not-graphql', 'origin-not-graphql', 'origin-not-graphql', 'origin-not-graphql']);
  });

  it('relays GraphQL results, errors included, and 4xx: they are the origin answering', async () => {
    await exchange({ status: 200, body: STORED });
    now = T0 + 11_000;
    const errors = { status: 200, body: Buffer.from('{"errors":[{"message":"resolver failed"}]}') };
    expect(await exchange(errors)).toEqual({ answeredBy: 'origin', headers: [['svc-cache', 'PASS']], outcome: 'PASS' });
    expect(await exchange({ status: 400, body: Buffer.from('{"errors":[{"message":"bad"}]}') })).toMatchObject({ answeredBy: 'origin', outcome: 'PASS' });
    expect(await exchange({ status: 429, body: Buffer.from('slow down') })).toMatchObject({ answeredBy: 'origin', outcome: 'PASS' });
    expect(reported).toEqual([]);
    // A good answer refreshes the entry: the next request is a HIT again.
    expect((await exchange({ status: 200, body: Buffer.from('{"data":{"todos":[]}}') })).outcome).toBe('MISS');
    expect(await exchange({ status: 500 })).toMatchObject({ answeredBy: 'request', outcome: 'HIT' });
  });

  it('serves up to staleIfError seconds past expiry, judged when the origin answers', async () => {
    await exchange({ status: 200, body: STORED });
    now = T0 + 40_000;
    expect(await exchange({ status: 500 })).toMatchObject({ answeredBy: 'response-headers', response: stale(40) });
    now = T0 + 40_001;
    expect(await exchange({ status: 500 })).toEqual({ answeredBy: 'origin', headers: [['svc-cache', 'PASS']], outcome: 'PASS' });
    now = T0 + 39_000;
    expect(await exchange({ status: 500 }, () => (now = T0 + 40_001))).toMatchObject({ answeredBy: 'origin', outcome: 'PASS' });
  });

  it("reads the entry again when the origin fails: one _purgeAll removed while the origin was asked is not served, the origin's failure is", async () => {
    await exchange({ status: 200, body: STORED });
    now = T0 + 15_000;
    let removed = 0;
    const failed = await exchange({ status: 500 }, async () => (removed = await store.invalidateAll()));
    expect(removed).toBe(1);
    expect(failed).toEqual({ answeredBy: 'origin', headers: [['svc-cache', 'PASS']], outcome: 'PASS' });
    expect(reported).toEqual([]);
    // The same at the body: a 200 that is no GraphQL result.
    await exchange({ status: 200, body: STORED });
    now = T0 + 30_000;
    const notGraphQL = await exchange({ status: 200, body: Buffer.from('<html>') }, () => store.invalidateAll());
    expect(notGraphQL).toEqual({ answeredBy: 'origin', headers: [['svc-cache', 'PASS']], outcome: 'PASS' });
    expect(reported).toEqual([]);
  });

  it('serves a soft-purged entry, and the entry as read again: a newer one stored while the origin was asked', async () => {
    await exchange({ status: 200, body: STORED });
    now = T0 + 15_000;
    expect(await exchange({ status: 500 }, () => store.markAllStale())).toMatchObject({ answeredBy: 'response-headers', response: stale(15) });

    const newer = Buffer.from('{"data":{"todos":[{"id":"2"}]}}');
    const storeNewer = async () => {
      const { entry, mark } = await store.lookup(storedKeys[0]!);
      // Stored 20 s after the first, and already 5 s past its maxAge: still within its window.
      const response = { ...entry!, body: newer, identityLength: newer.length, storedAt: T0 + 20_000 };
      await store.store(storedKeys[0]!, response, { tags: [], ttlSeconds: 40, mark });
      now = T0 + 35_000;
    };
    expect(await exchange({ status: 500 }, storeNewer)).toMatchObject({ answeredBy: 'response-headers', response: { ...stale(15), body: newer } });
    expect(reported).toEqual(['origin-status', 'origin-status']);
  });

  it("relays the origin's failure when the store cannot be read again", async () => {
    await exchange({ status: 200, body: STORED });
    now = T0 + 15_000;
    const failing = () => {
      store.lookup = () => Promise.reject(new Error('store down'));
    };
    expect(await exchange({ status: 500 }, failing)).toEqual({ answeredBy: 'origin', headers: [['svc-cache', 'PASS']], outcome: 'PASS' });
    expect(reported).toEqual([]);
    expect(logged.filter((line) => line['level'] === 40)).toEqual([{ level: 40, err: 'store down', msg: 'cache store unavailable; relaying the origin failure' }]);
  });

  it.each(['max-age=10, must-revalidate', 'max-age=10, proxy-revalidate', 's-maxage=10', 'max-age=10, stale-if-error=0'])(
    'never serves an answer stored with %s stale, nor keeps it past its max-age',
    async (cacheControl) => {
      await exchange({ status: 200, headers: [JSON_TYPE, ['cache-control', cacheControl]], body: STORED });
      expect(ttls).toEqual(cacheControl.includes('stale-if-error') ? [15] : [10]);
      now = T0 + 10_001;
      expect(await exchange({ status: 503, headers: [HTML_TYPE], body: Buffer.from('<h1>down</h1>') })).toEqual({
        answeredBy: 'origin',
        headers: [['svc-cache', 'PASS']],
        outcome: 'PASS',
      });
      expect(reported).toEqual([]);
    },
  );

  it("serves up to the origin's stale-if-error past expiry when it is shorter than the rules'", async () => {
    const cacheControl: [string, string] = ['cache-control', 'max-age=10, stale-if-error=3'];
    await exchange({ status: 200, headers: [JSON_TYPE, cacheControl], body: STORED });
    expect(ttls).toEqual([15]);
    now = T0 + 13_000;
    const { headers, ...answer } = stale(13);
    expect(await exchange({ status: 500 })).toEqual({ answeredBy: 'response-headers', response: { ...answer, headers: [headers[0], cacheControl, ...headers.slice(1)] }, outcome: 'HIT' });
    now = T0 + 13_001;
    expect(await exchange({ status: 500 })).toEqual({ answeredBy: 'origin', headers: [['svc-cache', 'PASS']], outcome: 'PASS' });
  });

  it("reads the entry's own window again when the origin fails: a must-revalidate answer stored meanwhile is not served", async () => {
    await exchange({ status: 200, body: STORED });
    now = T0 + 15_000;
    const storeMustRevalidate = async () => {
      const { entry, mark } = await store.lookup(storedKeys[0]!);
      await store.store(storedKeys[0]!, { ...entry!, storedAt: T0 + 1_000, staleIfError: 0 }, { tags: [], ttlSeconds: 40, mark });
    };
    expect(await exchange({ status: 500 }, storeMustRevalidate)).toEqual({ answeredBy: 'origin', headers: [['svc-cache', 'PASS']], outcome: 'PASS' });
    expect(reported).toEqual([]);
  });

  it('takes the smallest staleIfError of the matched rules; 0 (the default) serves nothing stale', async () => {
    build([
      { types: ['Query'], maxAge: 10, staleIfError: 30 },
      { types: { Query: ['todos'] }, maxAge: 60, staleIfError: 5 },
    ]);
    await exchange({ status: 200, body: STORED });
    expect(ttls).toEqual([15]);
    now = T0 + 16_000;
    expect((await exchange({ status: 500 })).answeredBy).toBe('origin');

    build([{ types: ['Query'], maxAge: 10, swr: 30 }]);
    now = T0;
    await exchange({ status: 200, body: STORED });
    now = T0 + 11_000;
    expect((await exchange({ status: 500 })).answeredBy).toBe('origin');
  });
});

describe('what counts as an origin failure', () => {
  it('5xx, and a 200 without GraphQL JSON; streamed and encoded answers are relayed unread', () => {
    expect(failureByHead(502, [JSON_TYPE], false)).toBe('origin-status');
    expect(failureByHead(200, [HTML_TYPE], false)).toBe('origin-not-graphql');
    expect(failureByHead(200, [JSON_TYPE], true)).toBe('origin-not-graphql');
    expect(failureByHead(200, [JSON_TYPE], false)).toBe('read-body');
    expect(failureByHead(200, [['content-type', 'text/event-stream']], false)).toBeUndefined();
    expect(failureByHead(200, [JSON_TYPE, ['content-encoding', 'gzip']], false)).toBeUndefined();
    expect(failureByHead(404, [JSON_TYPE], false)).toBeUndefined();
    expect(failureByHead(304, [], true)).toBeUndefined();
  });

  it('a GraphQL result is a JSON object with data or errors', () => {
    const results = ['{"data":null}', '{"errors":[]}', '{"data":{}}', '{}', '[]', 'null', '<html>', ''];
    expect(results.map((text) => isGraphQLResult(Buffer.from(text)))).toEqual([true, true, true, false, false, false, false, false]);
  });
});
