import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { scanKeys } from '../store/redisInspection.js';
import { postGraphQL, startDemoOrigin, type DemoOrigin, type GraphQLHttpResult } from '../support/origin.js';
import { startRedisServer, TEST_REDIS_COMMAND_TIMEOUT_MS, type RedisServer } from '../support/redis.js';
import { startStack, type ConfigInput, type Stack } from '../support/stack.js';
import type { GraphQLRequestParams } from '../support/origin.js';
import { postGraphQLRaw } from '../support/rawHttp.js';

/** Replicas serve one site: their requests name the same host, whichever replica's port they reach. */
function throughSite(url: string, params: GraphQLRequestParams, headers: Record<string, string> = {}) {
  return postGraphQLRaw(url, params, [['host', 'app.test'], ...Object.entries(headers)]);
}

/**
 * The stack on a real, private Redis: what reaches the store, replicas sharing it, and Redis going
 * away and coming back while clients keep sending requests through the gateway.
 */

const SECRET_TOKEN = 'very-secret-token-123';
const SESSION_ID = 'sess-0b6c2f9e4a7d41d8';
const SHARED_SECRET = 'shared-scope-key-secret-0123456789';

const ME = '{ me { id name } }';
const TIME = '{ time }';
const TODOS = '{ todos { id title } }';
const TODOS_BODY =
  '{"data":{"todos":[{"id":"1","title":"Buy milk"},{"id":"2","title":"Write the report"},{"id":"3","title":"Walk the dog"}]}}';
const ALICE = '{"data":{"me":{"id":"u1","name":"Alice"}}}';

function scopedConfig(redisUrl: string, scopeKeySecret: string): ConfigInput {
  return {
    redis: { url: redisUrl, keyPrefix: 'svc-cache:', commandTimeoutMs: TEST_REDIS_COMMAND_TIMEOUT_MS },
    scopes: { AUTHENTICATED: 'header:authorization', SESSION: 'cookie:session' },
    rules: [
      { types: ['Query'], maxAge: 60 },
      { types: { Query: ['me'] }, maxAge: 60, scope: 'AUTHENTICATED' },
      { types: { Query: ['time'] }, maxAge: 60, scope: 'SESSION' },
    ],
    cache: { scopeKeySecret },
  };
}

function statuses(results: readonly GraphQLHttpResult<unknown>[]): Array<string | undefined> {
  return results.map((result) => result.headers['svc-cache']);
}

/** Every key of the server and everything stored under it, whatever the Redis type, as raw bytes. */
async function dumpEverything(client: Redis): Promise<Array<{ key: string; type: string; contents: Buffer[] }>> {
  const dump = [];
  for (const key of await scanKeys(client, '*')) {
    const type = await client.type(key);
    let contents: Buffer[];
    if (type === 'string') contents = [(await client.getBuffer(key)) ?? Buffer.alloc(0)];
    else if (type === 'zset') contents = await client.zrangeBuffer(key, 0, -1, 'WITHSCORES');
    else if (type === 'hash') {
      contents = Object.entries(await client.hgetallBuffer(key)).flatMap(([field, value]) => [Buffer.from(field), value]);
    }
    else if (type === 'set') contents = await client.smembersBuffer(key);
    else if (type === 'list') contents = await client.lrangeBuffer(key, 0, -1);
    else throw new Error(`key ${key} has type ${type}, which this dump does not read`);
    dump.push({ key, type, contents });
  }
  return dump;
}


describe('the Redis store behind the gateway', () => {
  let redis: RedisServer;
  let client: Redis;

  beforeAll(async () => {
    redis = await startRedisServer();
    client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    // While the server is killed this inspection client reconnects by itself; its errors are expected.
    client.on('error', () => undefined);
    await client.connect();
  });
  afterAll(async () => {
    client.disconnect();
    await redis?.stop();
  });
  beforeEach(async () => {
    await client.flushall();
  });

  it('keeps raw tokens and cookies out of every key and value it writes', async () => {
    const stack = await startStack(scopedConfig(redis.url, SHARED_SECRET));
    try {
      const credentials = { authorization: `Bearer ${SECRET_TOKEN}`, cookie: `theme=dark; session=${SESSION_ID}` };
      const queries = [ME, TIME, '{ me { id } time }'].flatMap((query) => [query, query]);
      const answers: GraphQLHttpResult<unknown>[] = [];
      for (const query of queries) answers.push(await postGraphQL(stack.url, { query }, credentials));
      expect(statuses(answers)).toEqual(['MISS', 'HIT', 'MISS', 'HIT', 'MISS', 'HIT']);
      expect(answers[0]?.text).toBe('{"data":{"me":null}}');

      const dump = await dumpEverything(client);
      const entries = dump.filter(({ key }) => /^svc-cache:\{p\d+\.\d+\}:e:/.test(key));
      expect(entries).toHaveLength(3);
      expect(dump.every(({ key }) => key.startsWith('svc-cache:'))).toBe(true);
      expect(Buffer.concat(entries.flatMap(({ contents }) => contents)).toString('latin1')).toContain('{"data":{"me":null}}');
      const everything = dump.map(({ key, contents }) => [key, ...contents.map((bytes) => bytes.toString('latin1'))]).flat();
      for (const raw of [SECRET_TOKEN, SESSION_ID, `Bearer ${SECRET_TOKEN}`, `session=${SESSION_ID}`]) {
        expect(everything.filter((text) => text.includes(raw)), raw).toEqual([]);
      }
    } finally {
      await stack.close();
    }
  });

  describe('two sidecars sharing one Redis and one origin', () => {
    let origin: DemoOrigin;

    beforeAll(async () => {
      origin = await startDemoOrigin({ port: 0 });
    });
    afterAll(async () => {
      await origin.close();
    });

    async function startPair(secretA: string, secretB: string): Promise<[Stack, Stack]> {
      const first = await startStack(scopedConfig(redis.url, secretA), { origin });
      const second = await startStack(scopedConfig(redis.url, secretB), { origin });
      origin.reset();
      return [first, second];
    }

    it('with the same scopeKeySecret, a MISS through one is a HIT through the other, PUBLIC and scoped', async () => {
      const [first, second] = await startPair(SHARED_SECRET, SHARED_SECRET);
      try {
        const alice = { authorization: 'Bearer alice' };
        const session = { cookie: 'session=s1' };
        const publicMiss = await throughSite(first.url, { query: TODOS });
        const publicHit = await throughSite(second.url, { query: TODOS });
        const scopedMiss = await throughSite(second.url, { query: ME }, alice);
        const scopedHit = await throughSite(first.url, { query: ME }, alice);
        const otherUser = await throughSite(first.url, { query: ME }, { authorization: 'Bearer bob' });
        const sessionMiss = await throughSite(first.url, { query: TIME }, session);
        const sessionHit = await throughSite(second.url, { query: TIME }, session);
        expect(statuses([publicMiss, publicHit, scopedMiss, scopedHit, otherUser, sessionMiss, sessionHit])).toEqual([
          'MISS',
          'HIT',
          'MISS',
          'HIT',
          'MISS',
          'MISS',
          'HIT',
        ]);
        expect([publicMiss.text, publicHit.text]).toEqual([TODOS_BODY, TODOS_BODY]);
        expect([scopedMiss.text, scopedHit.text]).toEqual([ALICE, ALICE]);
        expect(otherUser.text).toBe('{"data":{"me":{"id":"u2","name":"Bob"}}}');
        expect(sessionHit.text).toBe(sessionMiss.text);
        expect(origin.requestCount()).toBe(4);
      } finally {
        await second.close();
        await first.close();
      }
    });

    it('with different scopeKeySecrets, they share PUBLIC entries but never scoped ones', async () => {
      const [first, second] = await startPair(SHARED_SECRET, 'another-scope-key-secret-9876543210');
      try {
        const alice = { authorization: 'Bearer alice' };
        const results = [
          await throughSite(first.url, { query: TODOS }),
          await throughSite(second.url, { query: TODOS }),
          await throughSite(first.url, { query: ME }, alice),
          await throughSite(second.url, { query: ME }, alice),
          await throughSite(first.url, { query: ME }, alice),
          await throughSite(second.url, { query: ME }, alice),
        ];
        expect(statuses(results)).toEqual(['MISS', 'HIT', 'MISS', 'MISS', 'HIT', 'HIT']);
        expect(results.slice(2).map((result) => result.text)).toEqual([ALICE, ALICE, ALICE, ALICE]);
        expect(origin.requestCount()).toBe(3);
      } finally {
        await second.close();
        await first.close();
      }
    });
  });

  it('answers every request from the origin while Redis is down, and caches again once it is back', async () => {
    const stack = await startStack(scopedConfig(redis.url, SHARED_SECRET));
    try {
      const alice = { authorization: 'Bearer alice' };
      const warm = [await postGraphQL(stack.url, { query: TODOS }), await postGraphQL(stack.url, { query: TODOS })];
      expect(statuses(warm)).toEqual(['MISS', 'HIT']);

      await redis.kill();
      stack.origin.reset();
      const whileDown = [
        await postGraphQL(stack.url, { query: TODOS }),
        await postGraphQL(stack.url, { query: TODOS }),
        await postGraphQL(stack.url, { query: ME }, alice),
        await postGraphQL(stack.url, { query: ME }, alice),
        ...(await Promise.all(Array.from({ length: 8 }, () => postGraphQL(stack.url, { query: TODOS })))),
      ];
      expect(whileDown.map((result) => [result.status, result.headers['svc-cache']])).toEqual(
        Array(12).fill([200, 'PASS']),
      );
      expect(whileDown.map((result) => result.text)).toEqual([
        TODOS_BODY,
        TODOS_BODY,
        ALICE,
        ALICE,
        ...Array<string>(8).fill(TODOS_BODY),
      ]);
      expect(stack.origin.requestCount()).toBe(12);

      await redis.restart();
      await vi.waitFor(() => stack.sidecar.store.ping(), { timeout: 5000, interval: 50 });
      const afterRestart = [
        await postGraphQL(stack.url, { query: TODOS }),
        await postGraphQL(stack.url, { query: TODOS }),
        await postGraphQL(stack.url, { query: ME }, alice),
        await postGraphQL(stack.url, { query: ME }, alice),
      ];
      expect(statuses(afterRestart)).toEqual(['MISS', 'HIT', 'MISS', 'HIT']);
      expect(afterRestart.map((result) => result.text)).toEqual([TODOS_BODY, TODOS_BODY, ALICE, ALICE]);
    } finally {
      await stack.close();
    }
  });
});
