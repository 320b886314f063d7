import { describe, expect, it } from 'vitest';
import { request } from 'node:http';
import { postGraphQL } from '../support/origin.js';
import { readResponse } from '../support/rawHttp.js';
import { type Stack, useStack } from '../support/stack.js';

/** Automatic invalidation after mutations, per mutation policy, through the gateway. */

const LIST = '{ todos { id title } }';
const TODO_1 = '{ todo(id: "1") { id title } }';
const TODO_2 = '{ todo(id: "2") { id title } }';
const USERS = '{ users { id name } }';
const OPEN_TODOS = '{ todos(done: false) { id title } }';
const DONE_TODOS = '{ todos(done: true) { id title } }';
const SEARCH = '{ search(text: "") { ... on Todo { title } ... on User { name } } }';
const PRODUCT_1 = '{ product(sku: "sku-1") { name price } }';

async function cacheStatuses(stack: Stack, queries: string[]): Promise<string[]> {
  const statuses: string[] = [];
  for (const query of queries) statuses.push((await postGraphQL(stack.url, { query })).headers['svc-cache']!);
  return statuses;
}

async function warm(stack: Stack, queries: string[]): Promise<void> {
  expect(await cacheStatuses(stack, queries)).toEqual(queries.map(() => 'MISS'));
  expect(await cacheStatuses(stack, queries)).toEqual(queries.map(() => 'HIT'));
}

describe.each(['Entity', 'List', 'Type', 'None'] as const)('mutationPolicy %s', (policy) => {
  const stack = useStack({ mutationPolicy: policy });

  it('after updating Todo 1', async () => {
    await warm(stack(), [LIST, TODO_1, TODO_2, USERS, SEARCH]);
    const update = await postGraphQL(stack().url, { query: 'mutation { updateTodo(id: "1", title: "Renamed") { title } }' });
    expect(update.headers['svc-cache']).toBe('PASS');
    expect(update.text).toBe('{"data":{"updateTodo":{"title":"Renamed"}}}');

    const after = await cacheStatuses(stack(), [LIST, TODO_1, TODO_2, USERS, SEARCH]);
    const expected = {
      // Every entry holding Todo:1 misses; other todos and other types stay.
      Entity: ['MISS', 'MISS', 'HIT', 'HIT', 'MISS'],
      List: ['MISS', 'MISS', 'HIT', 'HIT', 'MISS'],
      // Every entry holding any Todo.
      Type: ['MISS', 'MISS', 'MISS', 'HIT', 'MISS'],
      None: ['HIT', 'HIT', 'HIT', 'HIT', 'HIT'],
    }[policy];
    expect(after).toEqual(expected);
    if (policy !== 'None') {
      const fresh = await postGraphQL(stack().url, { query: TODO_1 });
      expect(fresh.json?.data).toEqual({ todo: { id: '1', title: 'Renamed' } });
    }
  });

  it('after adding a todo', async () => {
    await warm(stack(), [LIST, TODO_1, USERS, OPEN_TODOS, DONE_TODOS]);
    const add = await postGraphQL(stack().url, { query: 'mutation { addTodo(title: "New") { title done } }' });
    expect(add.text).toBe('{"data":{"addTodo":{"title":"New","done":false}}}');
    const after = await cacheStatuses(stack(), [LIST, TODO_1, USERS, OPEN_TODOS, DONE_TODOS]);
    const expected = {
      // docs/graphql-caching.md, Invalidation: an added item does not touch list queries under Entity.
      Entity: ['HIT', 'HIT', 'HIT', 'HIT', 'HIT'],
      // The new todo is not done: the list of done todos cannot hold it (listArguments mode match).
      List: ['MISS', 'HIT', 'HIT', 'MISS', 'HIT'],
      Type: ['MISS', 'MISS', 'HIT', 'MISS', 'MISS'],
      None: ['HIT', 'HIT', 'HIT', 'HIT', 'HIT'],
    }[policy];
    expect(after).toEqual(expected);
    if (policy === 'List') {
      const open = await postGraphQL(stack().url, { query: OPEN_TODOS });
      expect(open.text).toBe('{"data":{"todos":[{"id":"1","title":"Buy milk"},{"id":"3","title":"Walk the dog"},{"id":"4","title":"New"}]}}');
    }
  });

  it('after adding the todo a cached lookup found nothing for', async () => {
    const TODO_4 = '{ todo(id: "4") { id title } }';
    await warm(stack(), [TODO_4, TODO_1]);
    expect((await postGraphQL(stack().url, { query: TODO_4 })).text).toBe('{"data":{"todo":null}}');
    const add = await postGraphQL(stack().url, { query: 'mutation { addTodo(title: "New") { id } }' });
    expect(add.text).toBe('{"data":{"addTodo":{"id":"4"}}}');
    // The answer names Todo:4, which the null was asked for; Type names every Todo.
    expect(await cacheStatuses(stack(), [TODO_4, TODO_1])).toEqual({ Entity: ['MISS', 'HIT'], List: ['MISS', 'HIT'], Type: ['MISS', 'MISS'], None: ['HIT', 'HIT'] }[policy]);
    if (policy !== 'None') expect((await postGraphQL(stack().url, { query: TODO_4 })).text).toBe('{"data":{"todo":{"id":"4","title":"New"}}}');
  });

  it('after finishing todo 1', async () => {
    await warm(stack(), [OPEN_TODOS, DONE_TODOS, TODO_2]);
    const finish = await postGraphQL(stack().url, { query: 'mutation { updateTodo(id: "1", done: true) { id } }' });
    expect(finish.text).toBe('{"data":{"updateTodo":{"id":"1"}}}');
    const after = await cacheStatuses(stack(), [OPEN_TODOS, DONE_TODOS, TODO_2]);
    const expected = {
      // The open list holds Todo:1; the done list does not yet, so only List and Type reach it.
      Entity: ['MISS', 'HIT', 'HIT'],
      List: ['MISS', 'MISS', 'HIT'],
      Type: ['MISS', 'MISS', 'MISS'],
      None: ['HIT', 'HIT', 'HIT'],
    }[policy];
    expect(after).toEqual(expected);
  });
});

describe('a mutation sent to a variant of the endpoint path', () => {
  const stack = useStack({ mutationPolicy: 'Entity' });

  // The demo origin routes as Express does a handler mounted with app.use('/graphql'): `/graphql/`,
  // `/GraphQL` and `/graphql/x` run its GraphQL handler.
  it.each(['/graphql/', '/GraphQL', '/graphql/x'])('invalidates the types its root fields return when sent to %s, unread', async (variant) => {
    await warm(stack(), [LIST, TODO_1, USERS]);
    const url = stack().url.replace(/\/graphql$/, variant);
    const update = await postGraphQL(url, { query: 'mutation { updateTodo(id: "1", title: "Renamed") { title } }' });
    expect([update.headers['svc-cache'], update.text]).toEqual(['PASS', '{"data":{"updateTodo":{"title":"Renamed"}}}']);
    expect(await cacheStatuses(stack(), [LIST, TODO_1, USERS])).toEqual(['MISS', 'MISS', 'HIT']);
    expect((await postGraphQL(stack().url, { query: TODO_1 })).json?.data).toEqual({ todo: { id: '1', title: 'Renamed' } });
  });

  // fetch would send `\\` as `/`: the path goes on the wire as written. The demo origin parses it
  // with Node's URL, as Yoga does, which reads `\\` as `/`.
  it.each(['/graphql\\', '/graphql\\x'])('invalidates for a mutation sent to %s, which a WHATWG URL parser routes to /graphql', async (path) => {
    await warm(stack(), [LIST, TODO_1, USERS]);
    const { port } = new URL(stack().url);
    const body = JSON.stringify({ query: 'mutation { updateTodo(id: "1", title: "Renamed") { title } }' });
    const update = await new Promise<{ status: number; cache: unknown; text: string }>((resolve, reject) => {
      const outgoing = request({ host: '127.0.0.1', port, path, method: 'POST', headers: { 'content-type': 'application/json' } }, (response) => {
        readResponse(response).then(({ status, headers, body: bytes }) => resolve({ status, cache: headers['svc-cache'], text: bytes.toString() }), reject);
      });
      outgoing.on('error', reject);
      outgoing.end(body);
    });
    expect(update).toEqual({ status: 200, cache: 'PASS', text: '{"data":{"updateTodo":{"title":"Renamed"}}}' });
    expect(await cacheStatuses(stack(), [LIST, TODO_1, USERS])).toEqual(['MISS', 'MISS', 'HIT']);
  });

  it('leaves the cache alone for a query sent there, which it does not cache either', async () => {
    await warm(stack(), [LIST, USERS]);
    const url = stack().url.replace(/\/graphql$/, '/graphql/');
    const first = await postGraphQL(url, { query: LIST });
    const second = await postGraphQL(url, { query: LIST });
    expect([first.headers['svc-cache'], second.headers['svc-cache'], second.text]).toEqual(['PASS', 'PASS', first.text]);
    expect(await cacheStatuses(stack(), [LIST, USERS])).toEqual(['HIT', 'HIT']);
  });
});

describe('entities keyed by another field, and fields svc-cache adds', () => {
  const stack = useStack({ keyFields: { defaults: ['id'], types: { Product: ['sku'] } } });

  it('invalidates a Product by its sku', async () => {
    const PRODUCT_2 = '{ product(sku: "sku-2") { name } }';
    await warm(stack(), [PRODUCT_1, PRODUCT_2]);
    await postGraphQL(stack().url, { query: 'mutation { updateProduct(sku: "sku-1", price: 9.5) { price } }' });
    expect(await cacheStatuses(stack(), [PRODUCT_1, PRODUCT_2])).toEqual(['MISS', 'HIT']);
    expect((await postGraphQL(stack().url, { query: PRODUCT_1 })).json?.data).toEqual({
      product: { name: expect.any(String), price: 9.5 },
    });
  });

  it('never returns fields the client did not ask for, aliases included, MISS and HIT alike', async () => {
    const cases: Array<[string, string]> = [
      ['{ todos { title } }', '{"data":{"todos":[{"title":"Buy milk"},{"title":"Write the report"},{"title":"Walk the dog"}]}}'],
      ['{ todo(id: "1") { id: title } }', '{"data":{"todo":{"id":"Buy milk"}}}'],
      ['{ todo(id: "2") { name: title other: id } }', '{"data":{"todo":{"name":"Write the report","other":"2"}}}'],
      ['{ node(id: "1") { ... on Todo { title } } }', '{"data":{"node":{"title":"Buy milk"}}}'],
      ['{ products { name } }', '{"data":{"products":[{"name":"Coffee beans"},{"name":"Green tea"}]}}'],
    ];
    for (const [query, body] of cases) {
      const direct = await postGraphQL(stack().origin.url, { query });
      const miss = await postGraphQL(stack().url, { query });
      const hit = await postGraphQL(stack().url, { query });
      expect(direct.text, query).toBe(body);
      expect([miss.headers['svc-cache'], miss.text], query).toEqual(['MISS', body]);
      expect([hit.headers['svc-cache'], hit.text], query).toEqual(['HIT', body]);
      expect(miss.headers['content-length'], query).toBe(String(Buffer.byteLength(body)));
    }
    // What the origin got through svc-cache for the first query: the key field added under an alias.
    const forwarded = stack().origin.requests.find((r) => r.headers['x-forwarded-proto'] && r.body.includes('todos'));
    expect(JSON.parse(forwarded!.body)).toEqual({ query: '{\n  todos {\n    title\n    _svc_id: id\n  }\n}' });
  });

  it('strips added fields from a mutation answer too', async () => {
    const update = await postGraphQL(stack().url, { query: 'mutation { updateTodo(id: "3", done: true) { done } }' });
    expect(update.text).toBe('{"data":{"updateTodo":{"done":true}}}');
  });
});
