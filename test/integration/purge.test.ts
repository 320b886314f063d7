import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { postGraphQL } from '../support/origin.js';
import { startReplicasSharingRedis, type Replicas } from '../support/replicas.js';
import { type ConfigInput, type Stack, useStack } from '../support/stack.js';
import type { GraphQLRequestParams } from '../support/origin.js';
import { postGraphQLRaw } from '../support/rawHttp.js';

/** Replicas serve one site: their requests name the same host, whichever replica's port they reach. */
function throughSite(url: string, params: GraphQLRequestParams, headers: Record<string, string> = {}) {
  return postGraphQLRaw(url, params, [['host', 'app.test'], ...Object.entries(headers)]);
}

/** The purge API, sent through the gateway as a POST mutation with the token header. */

const TOKEN = 'test-purge-token-0123456789';
const PURGE_CONFIG: ConfigInput = {
  purge: { tokens: [TOKEN] },
  keyFields: { defaults: ['id'], types: { Product: ['sku'] } },
};

const QUERIES = {
  list: '{ todos { id title } }',
  todo1: '{ todo(id: "1") { title } }',
  todo2: '{ todo(id: "2") { title } }',
  /** Not found: cached as `null`. */
  todo404: '{ todo(id: "404") { title } }',
  users: '{ users { name } }',
  named: 'query Team { users { id } }',
  product1: '{ product(sku: "sku-1") { name } }',
  product2: '{ product(sku: "sku-2") { name } }',
};
type Name = keyof typeof QUERIES;
const ALL = Object.keys(QUERIES) as Name[];

async function statuses(stack: Stack): Promise<Record<Name, string>> {
  const result = {} as Record<Name, string>;
  for (const name of ALL) result[name] = (await postGraphQL(stack.url, { query: QUERIES[name] })).headers['svc-cache']!;
  return result;
}

function expectMisses(after: Record<Name, string>, misses: Name[]): void {
  expect(after).toEqual(Object.fromEntries(ALL.map((name) => [name, misses.includes(name) ? 'MISS' : 'HIT'])));
}

/** `null` sends no token header at all. */
const purge = (stack: Stack, mutation: string, token: string | null = TOKEN) =>
  postGraphQL(stack.url, { query: mutation }, token === null ? {} : { 'svc-purge-token': token });

describe('purge mutations', () => {
  const stack = useStack(PURGE_CONFIG, { freshEachTest: false });
  beforeEach(async () => {
    await stack().sidecar.store.invalidateAll();
    await statuses(stack());
    expect(Object.values(await statuses(stack()))).toEqual(ALL.map(() => 'HIT'));
    stack().origin.reset();
  });

  it.each<[string, string, Name[]]>([
    ['_purgeTodo', 'mutation { _purgeTodo }', ['list', 'todo1', 'todo2', 'todo404']],
    ['purgeTodo(id)', 'mutation { purgeTodo(id: "1") }', ['list', 'todo1']],
    ['purgeTodo(id) of the todo a lookup found nothing for', 'mutation { purgeTodo(id: "404") }', ['todo404']],
    ['purgeTodo(id: [..])', 'mutation { purgeTodo(id: ["1", "2"]) }', ['list', 'todo1', 'todo2']],
    ['purgeTodo without a key', 'mutation { purgeTodo }', ['list', 'todo1', 'todo2', 'todo404']],
    ['_purgeUser', 'mutation { _purgeUser }', ['users', 'named']],
    ['purgeProduct(sku)', 'mutation { purgeProduct(sku: "sku-1") }', ['product1']],
    ['_purgeQuery', 'mutation { _purgeQuery(queries: [users]) }', ['users', 'named']],
    ['_purgeOperationName', 'mutation { _purgeOperationName(names: ["Team"]) }', ['named']],
    ['_purgeAll', 'mutation { _purgeAll }', ALL],
    ['_purgeTodo() with empty parentheses', 'mutation { _purgeTodo() }', ['list', 'todo1', 'todo2', 'todo404']],
    ['_purgeType(type)', 'mutation { _purgeType(type: "User") }', ['users', 'named']],
    ['_purgeType(keyFields)', 'mutation { _purgeType(type: "Todo", keyFields: [{ name: "id", value: "2" }]) }', ['list', 'todo2']],
  ])('%s clears exactly its entries and answers true', async (field, mutation, misses) => {
    const response = await purge(stack(), mutation);
    expect(response.status).toBe(200);
    const name = mutation.match(/\{ (\w+)/)![1]!;
    expect(response.text).toBe(`{"data":{"${name}":true}}`);
    expect(response.headers['svc-cache'], field).toBe('PASS');
    expect(stack().origin.requestCount(), 'a purge is never forwarded').toBe(0);
    expectMisses(await statuses(stack()), misses);
  });

  it('runs a purge sent with an empty operationName, which names no operation here', async () => {
    const response = await postGraphQL(stack().url, { query: 'mutation { _purgeAll }', operationName: '' }, { 'svc-purge-token': TOKEN });
    expect([response.status, response.json]).toEqual([200, { data: { _purgeAll: true } }]);
  });

  // An outside audit: a purge is a PASS answered by svc-cache, and had no svc-debug-pass-reason.
  it('explains a purge asked with svc-debug as the PASS it is', async () => {
    const response = await postGraphQL(stack().url, { query: 'mutation { _purgeAll }' }, { 'svc-purge-token': TOKEN, 'svc-debug': '1' });
    expect([response.status, response.headers['svc-cache'], response.headers['svc-debug-pass-reason']]).toEqual([200, 'PASS', 'purge']);
  });

  it('refuses a purge without a token or with a wrong one, and purges nothing', async () => {
    for (const token of [null, 'wrong-token', `${TOKEN}x`, '']) {
      const response = await purge(stack(), 'mutation { _purgeAll }', token);
      expect(response.status, String(token)).toBe(401);
      expect(response.json).toEqual({
        errors: [
          { message: 'Missing or invalid purge token in the svc-purge-token header', extensions: { code: 'UNAUTHENTICATED' } },
        ],
      });
    }
    expect(stack().origin.requestCount()).toBe(0);
    expectMisses(await statuses(stack()), []);
  });

  it('answers a malformed purge with a GraphQL validation error and purges nothing', async () => {
    const response = await purge(stack(), 'mutation { purgeProduct(id: "1") }');
    expect(response.status).toBe(200);
    expect(response.json?.errors?.map((e) => e.message)).toEqual([
      'Unknown argument "id" on field "Mutation.purgeProduct".',
    ]);
    expectMisses(await statuses(stack()), []);
  });

  it('introspects the purge schema with the token', async () => {
    const response = await postGraphQL(
      stack().url,
      { query: '{ __schema { mutationType { fields { name } } } }' },
      { 'svc-purge-token': TOKEN },
    );
    const fields = (response.json?.data as { __schema: { mutationType: { fields: Array<{ name: string }> } } }).__schema
      .mutationType.fields.map((f) => f.name);
    expect(fields).toEqual(expect.arrayContaining(['_purgeAll', '_purgeTodo', 'purgeTodo', 'purgeProduct', '_purgeQuery', '_purgeOperationName']));
    expect(stack().origin.requestCount()).toBe(0);
  });

  it('never forwards the purge token to the origin', async () => {
    await postGraphQL(stack().url, { query: '{ todos { done } }' }, { 'svc-purge-token': TOKEN });
    expect(stack().origin.requests).toHaveLength(1);
    expect(stack().origin.requests[0]!.headers['svc-purge-token']).toBeUndefined();
  });
});

describe('a purge through one sidecar', () => {
  let replicas: Replicas;
  let redis: Replicas['redis'];
  let replicaA: Stack;
  let replicaB: Stack;

  beforeAll(async () => {
    replicas = await startReplicasSharingRedis(PURGE_CONFIG);
    ({ redis, replicaA, replicaB } = replicas);
  });
  afterAll(async () => {
    await replicas.close();
  });

  it('holds on a second sidecar sharing the Redis, and a mutation through one invalidates for both', async () => {
    const query = { query: QUERIES.todo1 };
    expect((await throughSite(replicaA.url, query)).headers['svc-cache']).toBe('MISS');
    expect((await throughSite(replicaB.url, query)).headers['svc-cache']).toBe('HIT');

    expect((await purge(replicaA, 'mutation { purgeTodo(id: "1") }')).text).toBe('{"data":{"purgeTodo":true}}');
    expect((await throughSite(replicaB.url, query)).headers['svc-cache']).toBe('MISS');
    expect((await throughSite(replicaA.url, query)).headers['svc-cache']).toBe('HIT');

    await throughSite(replicaB.url, { query: 'mutation { updateTodo(id: "1", title: "Shared") { title } }' });
    const afterMutation = await throughSite(replicaA.url, query);
    expect(afterMutation.headers['svc-cache']).toBe('MISS');
    expect(afterMutation.json?.data).toEqual({ todo: { title: 'Shared' } });
  });

  it('answers 503 and never true when the store cannot apply the purge', async () => {
    await redis.kill();
    try {
      const response = await purge(replicaA, 'mutation { _purgeTodo }');
      expect(response.status).toBe(503);
      expect(response.json).toEqual({
        errors: [
          {
            message: 'The purge was not applied: the cache store did not confirm it. Retry the purge.',
            extensions: { code: 'PURGE_NOT_APPLIED' },
          },
        ],
      });
    } finally {
      await redis.restart();
    }
  });
});
