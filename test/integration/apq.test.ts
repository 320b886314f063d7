import { createHash } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  getGraphQL,
  graphQLGetUrl,
  persistedQueryExtensions,
  postGraphQL,
  type GraphQLHttpResult,
  type GraphQLRequestParams,
} from '../support/origin.js';
import { startReplicasSharingRedis, type Replicas } from '../support/replicas.js';
import { startStack, type Stack, useStack } from '../support/stack.js';
import { postGraphQLRaw } from '../support/rawHttp.js';

/** Replicas serve one site: their requests name the same host, whichever replica's port they reach. */
function throughSite(url: string, params: GraphQLRequestParams, headers: Record<string, string> = {}) {
  return postGraphQLRaw(url, params, [['host', 'app.test'], ...Object.entries(headers)]);
}

/** Automatic persisted queries through the gateway and the real ext_proc protocol. */

const TODOS = '{ todos { id title } }';
const NOT_FOUND = {
  errors: [{ message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }],
};
const APOLLO_NO_CACHE = 'private, no-cache, must-revalidate';

/**
 * What an unmodified Apollo client does (its persisted-query link): the hash alone first, and on
 * PersistedQueryNotFound the same request again with the query text. Returns every HTTP answer.
 */
async function apolloStyleRequest(
  url: string,
  method: 'GET' | 'POST',
  request: { query: string; variables?: Record<string, unknown>; operationName?: string },
): Promise<Array<GraphQLHttpResult<Record<string, unknown>>>> {
  const send = (params: GraphQLRequestParams) => (method === 'GET' ? getGraphQL(url, params) : postGraphQL(url, params));
  const hashOnly = {
    variables: request.variables,
    operationName: request.operationName,
    extensions: persistedQueryExtensions(request.query),
  };
  const first = await send(hashOnly);
  if (first.json?.errors?.[0]?.extensions?.code !== 'PERSISTED_QUERY_NOT_FOUND') return [first];
  return [first, await send({ ...hashOnly, query: request.query })];
}

describe('automatic persisted queries', () => {
  const stack = useStack();

  it('answers an unknown hash with Apollo\'s PersistedQueryNotFound and never calls the origin', async () => {
    const query = '{ todos { id done } }';
    for (const response of [
      await postGraphQL(stack().url, { extensions: persistedQueryExtensions(query) }),
      await getGraphQL(stack().url, { extensions: persistedQueryExtensions(query) }),
    ]) {
      expect(response.status).toBe(200);
      expect(response.json).toEqual(NOT_FOUND);
      expect(response.headers['cache-control']).toBe(APOLLO_NO_CACHE);
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    }
    expect(stack().origin.requestCount()).toBe(0);
  });

  it('registers a hash sent with its query, sends the origin the plain query, then serves the hash alone', async () => {
    const extensions = persistedQueryExtensions(TODOS);
    const registering = await postGraphQL(stack().url, { query: TODOS, extensions });
    expect(registering.status).toBe(200);
    expect(registering.headers['svc-cache']).toBe('MISS');
    expect(registering.json?.data).toEqual({ todos: expect.any(Array) });
    expect(JSON.parse(stack().origin.requests[0]!.body)).toEqual({ query: TODOS });

    const hashOnly = await postGraphQL(stack().url, { extensions });
    expect(hashOnly.headers['svc-cache']).toBe('HIT');
    expect(hashOnly.text).toBe(registering.text);
    const asText = await postGraphQL(stack().url, { query: TODOS });
    expect(asText.headers['svc-cache']).toBe('HIT');
    expect(stack().origin.requestCount()).toBe(1);
  });

  it('expands a registered hash for the origin when the entry is not cached (POST body and GET path)', async () => {
    const query = 'query One($id: ID!) { todo(id: $id) { id title } }';
    await postGraphQL(stack().url, { query, variables: { id: '1' }, extensions: persistedQueryExtensions(query) });
    stack().origin.reset();

    const post = await postGraphQL(stack().url, {
      variables: { id: '2' },
      operationName: 'One',
      extensions: { ...persistedQueryExtensions(query), client: 'x' },
    });
    expect(post.headers['svc-cache']).toBe('MISS');
    expect(post.json?.data).toEqual({ todo: { id: '2', title: expect.any(String) } });
    expect(JSON.parse(stack().origin.requests[0]!.body)).toEqual({
      query,
      variables: { id: '2' },
      operationName: 'One',
      extensions: { client: 'x' },
    });
    expect(stack().origin.requests[0]!.headers['content-length']).toBe(String(Buffer.byteLength(stack().origin.requests[0]!.body)));

    const get = await getGraphQL(stack().url, { variables: { id: '3' }, extensions: persistedQueryExtensions(query) });
    expect(get.headers['svc-cache']).toBe('MISS');
    expect(get.json?.data).toEqual({ todo: { id: '3', title: expect.any(String) } });
    const forwarded = new URL(`http://origin${stack().origin.requests[1]!.path}`).searchParams;
    expect(forwarded.get('query')).toBe(query);
    expect(forwarded.get('variables')).toBe('{"id":"3"}');
    expect(forwarded.has('extensions')).toBe(false);
  });

  // An outside audit: the hash alone of a document holding a mutation, with no operation named,
  // went to the origin unexpanded, which answered "Must provide query string".
  it('expands a registered hash for the origin when no operation of its document is named and one is a mutation', async () => {
    const query = 'query Q { todos { id } } mutation M { addTodo(title: "x") { id } }';
    await postGraphQL(stack().url, { query, operationName: 'Q', extensions: persistedQueryExtensions(query) });
    stack().origin.reset();
    for (const operationName of [undefined, '']) {
      const answer = await postGraphQL(stack().url, { operationName, extensions: persistedQueryExtensions(query) });
      expect(answer.headers['svc-cache']).toBe('PASS');
    }
    expect(stack().origin.requests.map((request) => JSON.parse(request.body))).toEqual([{ query }, { query, operationName: '' }]);
  });

  // A review: the same through Hot Chocolate's batchOperations, which passes whatever the document holds.
  it('expands a registered hash for the origin in a request naming batchOperations', async () => {
    const query = 'query Q { todos { id } } mutation M { addTodo(title: "x") { id } }';
    await postGraphQL(stack().url, { query, operationName: 'Q', extensions: persistedQueryExtensions(query) });
    stack().origin.reset();
    const answer = await postGraphQL(`${stack().url}?batchOperations=[Q]`, { extensions: persistedQueryExtensions(query) });
    expect([answer.headers['svc-cache'], stack().origin.requests.map((request) => JSON.parse(request.body))]).toEqual(['PASS', [{ query }]]);
  });

  it('keeps variables and operation name in the key of a hashed query', async () => {
    const query = 'query A($id: ID!) { todo(id: $id) { id } } query B { todos { id } }';
    const extensions = persistedQueryExtensions(query);
    await postGraphQL(stack().url, { query, operationName: 'A', variables: { id: '1' }, extensions });
    const otherVariables = await postGraphQL(stack().url, { operationName: 'A', variables: { id: '2' }, extensions });
    const otherOperation = await postGraphQL(stack().url, { operationName: 'B', extensions });
    const same = await postGraphQL(stack().url, { operationName: 'A', variables: { id: '1' }, extensions });
    expect([otherVariables, otherOperation, same].map((r) => r.headers['svc-cache'])).toEqual(['MISS', 'MISS', 'HIT']);
    expect(otherOperation.json?.data).toEqual({ todos: expect.any(Array) });
  });

  it.each([
    [
      'a hash that does not match the query',
      { query: TODOS, extensions: persistedQueryExtensions('{ users { id } }') },
      'provided sha does not match query',
    ],
    [
      'version 2',
      { query: TODOS, extensions: { persistedQuery: { version: 2, sha256Hash: persistedQueryExtensions(TODOS).persistedQuery.sha256Hash } } },
      'Unsupported persisted query version',
    ],
    [
      'no version',
      { extensions: { persistedQuery: { sha256Hash: persistedQueryExtensions(TODOS).persistedQuery.sha256Hash } } },
      'Unsupported persisted query version',
    ],
    [
      'a hash that is not 64 hexadecimal characters',
      { extensions: { persistedQuery: { version: 1, sha256Hash: 'abc' } } },
      'Invalid persisted query hash: expected 64 hexadecimal characters',
    ],
    [
      'a persistedQuery that is not an object',
      { extensions: { persistedQuery: 'abc' } },
      'Invalid persisted query: expected an object with version and sha256Hash',
    ],
  ])('answers %s with 400 and Apollo\'s message, never cached, never forwarded', async (_name, params, message) => {
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const response = await postGraphQL(stack().url, params);
      expect(response.status).toBe(400);
      expect(response.json).toEqual({ errors: [{ message, extensions: { code: 'BAD_REQUEST' } }] });
      expect(response.headers['svc-cache']).toBeUndefined();
    }
    const get = await getGraphQL(stack().url, params);
    expect(get.status).toBe(400);
    expect(stack().origin.requestCount()).toBe(0);
  });

  it('answers a GET by hash PersistedQueryNotFound when the expanded query would be too long a path', async () => {
    const query = `{ search(text: "${'x'.repeat(20 * 1024)}") { ... on Todo { title } } }`;
    const extensions = persistedQueryExtensions(query);
    const registered = await postGraphQL(stack().url, { query, extensions });
    expect(registered.headers['svc-cache']).toBe('MISS');
    await stack().sidecar.store.invalidateAll();
    stack().origin.reset();
    const overGet = await getGraphQL(stack().url, { extensions });
    expect([overGet.status, overGet.json]).toEqual([200, NOT_FOUND]);
    expect(stack().origin.requestCount()).toBe(0);
    const overPost = await postGraphQL(stack().url, { extensions });
    expect(overPost.headers['svc-cache']).toBe('MISS');
  });

  it('refuses a mutation sent by hash over GET with 405', async () => {
    const mutation = 'mutation { addTodo(title: "by hash") { id } }';
    const extensions = persistedQueryExtensions(mutation);
    const registered = await postGraphQL(stack().url, { query: mutation, extensions });
    expect(registered.headers['svc-cache']).toBe('PASS');
    const overGet = await getGraphQL(stack().url, { extensions });
    expect(overGet.status).toBe(405);
    // Also in a URL origins read otherwise (README, Bad input), which svc-cache leaves to the origin when it holds a query.
    for (const extra of ['&variables=', '&variables=null', `&extensions=${encodeURIComponent(JSON.stringify(extensions))}`]) {
      expect((await fetch(`${graphQLGetUrl(stack().url, { extensions })}${extra}`)).status).toBe(405);
    }
    expect(overGet.json).toEqual({
      errors: [{ message: 'Mutations cannot be sent with GET; use POST', extensions: { code: 'METHOD_NOT_ALLOWED' } }],
    });
    expect(stack().origin.requestCount()).toBe(1);
  });

  it.each(['POST', 'GET'] as const)('works for an unmodified Apollo-style client over %s', async (method) => {
    const query = `query ApolloStyle${method} { todos { id title done } }`;
    const first = await apolloStyleRequest(stack().url, method, { query });
    expect(first.map((r) => [r.status, r.json?.errors?.[0]?.message ?? r.headers['svc-cache']])).toEqual([
      [200, 'PersistedQueryNotFound'],
      [200, 'MISS'],
    ]);
    const second = await apolloStyleRequest(stack().url, method, { query });
    expect(second.map((r) => [r.status, r.headers['svc-cache']])).toEqual([[200, 'HIT']]);
    expect(second[0]!.text).toBe(first[1]!.text);
    expect(stack().origin.requestCount()).toBe(1);
  });

  describe('registers a query only once the origin answered it with data', () => {
    const hashOnly = (query: string) => postGraphQL(stack().url, { extensions: persistedQueryExtensions(query) });

    it('never registers text that does not parse', async () => {
      const text = 'this is not graphql at all';
      const sent = await postGraphQL(stack().url, { query: text, extensions: persistedQueryExtensions(text) });
      expect(sent.json?.data).toBeUndefined();
      expect((await hashOnly(text)).json).toEqual(NOT_FOUND);
    });

    it('never registers a query over the limits', async () => {
      const deep = `{ ${'todos { author { '.repeat(13)}id${' } }'.repeat(13)} }`;
      const sent = await postGraphQL(stack().url, { query: deep, extensions: persistedQueryExtensions(deep) });
      expect(sent.status).toBe(400);
      expect((await hashOnly(deep)).json).toEqual(NOT_FOUND);
    });

    it('does not register a query the origin answers with errors only, nor one it refuses', async () => {
      const query = '{ todos { id done } }';
      stack().origin.setBehaviour({
        forcedResponse: { status: 200, headers: { 'content-type': 'application/json' }, body: '{"errors":[{"message":"backend down"}]}' },
      });
      expect((await postGraphQL(stack().url, { query, extensions: persistedQueryExtensions(query) })).text).toBe('{"errors":[{"message":"backend down"}]}');
      stack().origin.setBehaviour({ forcedResponse: null });
      expect((await hashOnly(query)).json).toEqual(NOT_FOUND);
      const invalid = '{ todos { nope } }';
      await postGraphQL(stack().url, { query: invalid, extensions: persistedQueryExtensions(invalid) });
      expect((await hashOnly(invalid)).json).toEqual(NOT_FOUND);
    });

    it('registers a valid query after the origin answered it with data, whether or not the answer was stored', async () => {
      const query = '{ todos { id done } }';
      const withHash = await postGraphQL(stack().url, { query, extensions: persistedQueryExtensions(query) });
      expect(withHash.headers['svc-cache']).toBe('MISS');
      const alone = await hashOnly(query);
      expect([alone.headers['svc-cache'], alone.text]).toEqual(['HIT', withHash.text]);
      const uncached = '{ time }';
      stack().origin.setBehaviour({ headers: { 'cache-control': 'no-store' } });
      const passed = await postGraphQL(stack().url, { query: uncached, extensions: persistedQueryExtensions(uncached) });
      expect(passed.headers['svc-cache']).toBe('PASS');
      expect((await hashOnly(uncached)).json?.data).toHaveProperty('time');
    });

    it('registers on a HIT: the entry is the origin answering that query with data', async () => {
      const query = '{ users { id } }';
      expect((await postGraphQL(stack().url, { query })).headers['svc-cache']).toBe('MISS');
      expect((await postGraphQL(stack().url, { query, extensions: persistedQueryExtensions(query) })).headers['svc-cache']).toBe('HIT');
      expect((await hashOnly(query)).headers['svc-cache']).toBe('HIT');
      expect(stack().origin.requestCount()).toBe(1);
    });
  });
});

describe('automatic persisted queries turned off', () => {
  it('answers Apollo\'s PersistedQueryNotSupported and forwards nothing', async () => {
    const stack = await startStack({ apq: { enabled: false } });
    stack.origin.reset();
    try {
      const response = await postGraphQL(stack.url, { query: TODOS, extensions: persistedQueryExtensions(TODOS) });
      expect(response.status).toBe(200);
      expect(response.headers['cache-control']).toBe(APOLLO_NO_CACHE);
      expect(response.json).toEqual({
        errors: [{ message: 'PersistedQueryNotSupported', extensions: { code: 'PERSISTED_QUERY_NOT_SUPPORTED' } }],
      });
      expect(stack.origin.requestCount()).toBe(0);
    } finally {
      await stack.close();
    }
  });
});

describe('automatic persisted queries across replicas sharing Redis', () => {
  let replicas: Replicas;
  let redis: Replicas['redis'];
  let origin: Replicas['origin'];
  let replicaA: Stack;
  let replicaB: Stack;

  beforeAll(async () => {
    replicas = await startReplicasSharingRedis({ cache: { scopeKeySecret: 'shared-secret-of-the-replicas' } });
    ({ redis, origin, replicaA, replicaB } = replicas);
  });
  afterAll(async () => {
    await replicas.close();
  });
  beforeEach(() => origin.reset());

  it('serves through one replica a hash registered through the other', async () => {
    const query = '{ users { id name } }';
    const registered = await throughSite(replicaA.url, { query, extensions: persistedQueryExtensions(query) });
    expect(registered.headers['svc-cache']).toBe('MISS');
    const elsewhere = await throughSite(replicaB.url, { extensions: persistedQueryExtensions(query) });
    expect(elsewhere.headers['svc-cache']).toBe('HIT');
    expect(elsewhere.text).toBe(registered.text);
    expect(origin.requestCount()).toBe(1);
  });

  it('answers PersistedQueryNotFound while the registry is down, then serves the full query', async () => {
    const query = '{ products { sku name } }';
    const hash = createHash('sha256').update(query).digest('hex');
    await throughSite(replicaA.url, { query, extensions: persistedQueryExtensions(query) });
    await redis.kill();
    try {
      const hashOnly = await throughSite(replicaA.url, { extensions: { persistedQuery: { version: 1, sha256Hash: hash } } });
      expect(hashOnly.status).toBe(200);
      expect(hashOnly.json).toEqual(NOT_FOUND);
      const retried = await throughSite(replicaA.url, { query, extensions: persistedQueryExtensions(query) });
      expect(retried.status).toBe(200);
      expect(retried.headers['svc-cache']).toBe('PASS');
      expect(retried.json?.data).toEqual({ products: expect.any(Array) });
    } finally {
      await redis.restart();
    }
  });
});
