import { buildClientSchema, buildSchema, getIntrospectionQuery, printSchema, type IntrospectionQuery } from 'graphql';
import { describe, expect, it } from 'vitest';
import { demoSchemaSDL, getGraphQL, postGraphQL, startDemoOrigin, useDemoOrigin } from '../support/origin.js';

const origin = useDemoOrigin();

type Todo = { id: string; title: string; done: boolean; author: { id: string; name: string } | null };

describe('the demo origin', () => {
  it('listens on a free local port and serves /graphql only', async () => {
    expect(origin().url).toBe(`http://127.0.0.1:${origin().port}/graphql`);
    const elsewhere = await fetch(new URL('/other', origin().url), { method: 'POST', body: '{}' });
    expect(elsewhere.status).toBe(404);
    await elsewhere.body?.cancel();
  });

  it('serves exactly the exported SDL', async () => {
    const introspection = await postGraphQL<IntrospectionQuery>(origin().url, { query: getIntrospectionQuery() });
    const served = buildClientSchema(introspection.json?.data as IntrospectionQuery);
    expect(printSchema(served)).toBe(printSchema(buildSchema(demoSchemaSDL)));
  });

  it('starts on the port it is given', async () => {
    const first = await startDemoOrigin();
    await first.close();
    const second = await startDemoOrigin({ port: first.port });
    try {
      expect(second.url).toBe(`http://127.0.0.1:${first.port}/graphql`);
      expect((await postGraphQL(second.url, { query: '{ __typename }' })).status).toBe(200);
    } finally {
      await second.close();
    }
  });

  it('keeps its data apart from every other origin and can be closed twice', async () => {
    const other = await startDemoOrigin();
    await postGraphQL(other.url, { query: 'mutation { deleteTodo(id: "1") }' });
    await other.close();
    await other.close();
    const todos = await postGraphQL<{ todos: Todo[] }>(origin().url, { query: '{ todos { id } }' });
    expect(todos.json?.data?.todos).toHaveLength(3);
  });
});

describe('queries', () => {
  it('lists the seed todos with their authors', async () => {
    const result = await postGraphQL(origin().url, { query: '{ todos { id title done author { id name } } }' });
    expect(result.status).toBe(200);
    expect(result.json).toEqual({
      data: {
        todos: [
          { id: '1', title: 'Buy milk', done: false, author: { id: 'u1', name: 'Alice' } },
          { id: '2', title: 'Write the report', done: true, author: { id: 'u2', name: 'Bob' } },
          { id: '3', title: 'Walk the dog', done: false, author: { id: 'u1', name: 'Alice' } },
        ],
      },
    });
  });

  it('finds one todo by id, or null', async () => {
    const result = await postGraphQL(origin().url, {
      query: 'query Two($id: ID!) { todo(id: $id) { title } missing: todo(id: "99") { title } }',
      variables: { id: '2' },
      operationName: 'Two',
    });
    expect(result.json).toEqual({ data: { todo: { title: 'Write the report' }, missing: null } });
  });

  it('lists users with their todos and finds one by id', async () => {
    const result = await postGraphQL(origin().url, {
      query: '{ users { id name email todos { id } } user(id: "u2") { name } }',
    });
    expect(result.json).toEqual({
      data: {
        users: [
          { id: 'u1', name: 'Alice', email: 'alice@example.com', todos: [{ id: '1' }, { id: '3' }] },
          { id: 'u2', name: 'Bob', email: 'bob@example.com', todos: [{ id: '2' }] },
        ],
        user: { name: 'Bob' },
      },
    });
  });

  it('serves products keyed by sku', async () => {
    const result = await postGraphQL(origin().url, {
      query: '{ products { sku name price } product(sku: "sku-2") { name } missing: product(sku: "nope") { name } }',
    });
    expect(result.json).toEqual({
      data: {
        products: [
          { sku: 'sku-1', name: 'Coffee beans', price: 12.5 },
          { sku: 'sku-2', name: 'Green tea', price: 4.25 },
        ],
        product: { name: 'Green tea' },
        missing: null,
      },
    });
  });

  it('resolves todos and users through the Node interface', async () => {
    const result = await postGraphQL(origin().url, {
      query: `{
        todo: node(id: "3") { __typename id ... on Todo { title } }
        user: node(id: "u1") { __typename id ... on User { name } }
        none: node(id: "sku-1") { id }
      }`,
    });
    expect(result.json).toEqual({
      data: {
        todo: { __typename: 'Todo', id: '3', title: 'Walk the dog' },
        user: { __typename: 'User', id: 'u1', name: 'Alice' },
        none: null,
      },
    });
  });

  it('searches todos, users and products through the SearchResult union', async () => {
    const result = await postGraphQL(origin().url, {
      query: `{ search(text: "E") {
        __typename
        ... on Todo { id }
        ... on User { id }
        ... on Product { sku }
      } }`,
    });
    expect(result.json).toEqual({
      data: {
        search: [
          { __typename: 'Todo', id: '2' },
          { __typename: 'Todo', id: '3' },
          { __typename: 'User', id: 'u1' },
          { __typename: 'Product', sku: 'sku-1' },
          { __typename: 'Product', sku: 'sku-2' },
        ],
      },
    });
  });

  it('answers a different time on every call', async () => {
    const times = await Promise.all(
      [1, 2, 3].map(async () => (await postGraphQL<{ time: string }>(origin().url, { query: '{ time }' })).json?.data?.time),
    );
    expect(new Set(times).size).toBe(3);
    for (const time of times) expect(time).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('answers queries over GET, variables in the query string', async () => {
    const result = await getGraphQL(origin().url, {
      query: 'query One($id: ID!) { todo(id: $id) { title } }',
      variables: { id: '1' },
    });
    expect(result.status).toBe(200);
    expect(result.json).toEqual({ data: { todo: { title: 'Buy milk' } } });
  });

  it('refuses mutations over GET', async () => {
    const result = await getGraphQL(origin().url, { query: 'mutation { deleteTodo(id: "1") }' });
    expect(result.status).toBe(405);
    const todos = await postGraphQL<{ todos: Todo[] }>(origin().url, { query: '{ todos { id } }' });
    expect(todos.json?.data?.todos).toHaveLength(3);
  });

  it('answers errors the GraphQL over HTTP way for each accepted media type', async () => {
    const asJson = await postGraphQL(origin().url, { query: '{ nope }' });
    expect(asJson.status).toBe(200);
    expect(asJson.json?.errors?.[0]?.message).toMatch(/nope/);
    const asGraphQLResponse = await postGraphQL(
      origin().url,
      { query: '{ nope }' },
      { Accept: 'application/graphql-response+json' },
    );
    expect(asGraphQLResponse.status).toBe(400);
    expect(asGraphQLResponse.headers['content-type']).toContain('application/graphql-response+json');
  });
});

describe('mutations', () => {
  it('adds a todo authored by the signed-in user, or by nobody', async () => {
    const added = await postGraphQL<{ addTodo: Todo }>(
      origin().url,
      { query: 'mutation { addTodo(title: "Water plants") { id title done author { id } } }' },
      { authorization: 'Bearer bob' },
    );
    expect(added.json?.data?.addTodo).toEqual({ id: '4', title: 'Water plants', done: false, author: { id: 'u2' } });
    const anonymous = await postGraphQL<{ addTodo: Todo }>(origin().url, {
      query: 'mutation { addTodo(title: "Anonymous") { id author { id } } }',
    });
    expect(anonymous.json?.data?.addTodo).toEqual({ id: '5', author: null });
    const bob = await postGraphQL(origin().url, { query: '{ user(id: "u2") { todos { id } } }' });
    expect(bob.json?.data).toEqual({ user: { todos: [{ id: '2' }, { id: '4' }] } });
  });

  it('updates only the fields given', async () => {
    const done = await postGraphQL(origin().url, { query: 'mutation { updateTodo(id: "1", done: true) { title done } }' });
    expect(done.json?.data).toEqual({ updateTodo: { title: 'Buy milk', done: true } });
    const renamed = await postGraphQL(origin().url, {
      query: 'mutation Rename($title: String) { updateTodo(id: "1", title: $title) { title done } }',
      variables: { title: 'Buy oat milk' },
    });
    expect(renamed.json?.data).toEqual({ updateTodo: { title: 'Buy oat milk', done: true } });
    const missing = await postGraphQL(origin().url, { query: 'mutation { updateTodo(id: "99", done: true) { id } }' });
    expect(missing.json?.data).toEqual({ updateTodo: null });
  });

  it('deletes a todo once', async () => {
    const query = 'mutation { deleteTodo(id: "2") }';
    expect((await postGraphQL(origin().url, { query })).json?.data).toEqual({ deleteTodo: '2' });
    expect((await postGraphQL(origin().url, { query })).json?.data).toEqual({ deleteTodo: null });
    const todos = await postGraphQL(origin().url, { query: '{ todos { id } }' });
    expect(todos.json?.data).toEqual({ todos: [{ id: '1' }, { id: '3' }] });
  });

  it('reprices a product and renames a user', async () => {
    const product = await postGraphQL(origin().url, {
      query: 'mutation { updateProduct(sku: "sku-1", price: 9.99) { sku price } }',
    });
    expect(product.json?.data).toEqual({ updateProduct: { sku: 'sku-1', price: 9.99 } });
    const user = await postGraphQL(origin().url, { query: 'mutation { updateUser(id: "u1", name: "Alicia") { id name } }' });
    expect(user.json?.data).toEqual({ updateUser: { id: 'u1', name: 'Alicia' } });
    const after = await postGraphQL(origin().url, { query: '{ product(sku: "sku-1") { price } todo(id: "1") { author { name } } }' });
    expect(after.json?.data).toEqual({ product: { price: 9.99 }, todo: { author: { name: 'Alicia' } } });
  });
});

describe('me', () => {
  it.each([
    [undefined, null],
    ['Bearer alice', { id: 'u1', name: 'Alice' }],
    ['Bearer bob', { id: 'u2', name: 'Bob' }],
    ['bearer bob', { id: 'u2', name: 'Bob' }],
    ['Bearer mallory', null],
    ['Basic YWxpY2U6', null],
    ['alice', null],
  ])('with authorization %s is %o', async (authorization, me) => {
    const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
    const result = await postGraphQL(origin().url, { query: '{ me { id name } }' }, headers);
    expect(result.json).toEqual({ data: { me } });
  });
});

describe('reset', () => {
  it('restores the seed, restarts the ids and forgets requests and behaviour', async () => {
    await postGraphQL(origin().url, { query: 'mutation { addTodo(title: "Extra") { id } }' });
    await postGraphQL(origin().url, { query: 'mutation { updateProduct(sku: "sku-2", price: 1) { price } }' });
    origin().setBehaviour({ headers: { 'x-extra': 'yes' }, delayMs: 5 });
    origin().reset();
    expect(origin().requestCount()).toBe(0);
    expect(origin().requests).toEqual([]);

    const after = await postGraphQL(origin().url, { query: '{ todos { id } product(sku: "sku-2") { price } }' });
    expect(after.json?.data).toEqual({ todos: [{ id: '1' }, { id: '2' }, { id: '3' }], product: { price: 4.25 } });
    expect(after.headers['x-extra']).toBeUndefined();
    const added = await postGraphQL(origin().url, { query: 'mutation { addTodo(title: "Again") { id } }' });
    expect(added.json?.data).toEqual({ addTodo: { id: '4' } });
  });
});

describe('setBehaviour', () => {
  it('adds headers to every GraphQL answer, repeated ones included', async () => {
    origin().setBehaviour({
      headers: { 'Cache-Control': 'no-store', 'set-cookie': ['session=abc; Path=/', 'theme=dark; Path=/'] },
    });
    const response = await fetch(origin().url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ todos { id } }' }),
    });
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.getSetCookie()).toEqual(['session=abc; Path=/', 'theme=dark; Path=/']);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await response.json()).toEqual({ data: { todos: [{ id: '1' }, { id: '2' }, { id: '3' }] } });
  });

  it('replaces only the fields given', async () => {
    origin().setBehaviour({ headers: { 'x-origin': 'demo' } });
    origin().setBehaviour({ delayMs: 1 });
    const result = await postGraphQL(origin().url, { query: '{ __typename }' });
    expect(result.headers['x-origin']).toBe('demo');
    origin().setBehaviour({ headers: {} });
    expect((await postGraphQL(origin().url, { query: '{ __typename }' })).headers['x-origin']).toBeUndefined();
  });

  it('delays answers, recording the request before the wait', async () => {
    origin().setBehaviour({ delayMs: 300 });
    const started = performance.now();
    const pending = postGraphQL(origin().url, { query: '{ time }' });
    await expect.poll(() => origin().requestCount(), { interval: 10, timeout: 250 }).toBe(1);
    const result = await pending;
    expect(result.status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('forces an answer without executing anything, until cleared', async () => {
    origin().setBehaviour({
      forcedResponse: { status: 500, headers: { 'Content-Type': 'text/plain' }, body: 'upstream exploded' },
      headers: { 'x-origin': 'demo' },
    });
    const forced = await postGraphQL(origin().url, { query: 'mutation { deleteTodo(id: "1") }' });
    expect(forced).toMatchObject({ status: 500, text: 'upstream exploded', json: undefined });
    expect(forced.headers['content-type']).toBe('text/plain');
    expect(forced.headers['x-origin']).toBe('demo');
    expect(forced.headers['content-length']).toBe(String('upstream exploded'.length));

    origin().setBehaviour({ forcedResponse: null });
    const todos = await postGraphQL(origin().url, { query: '{ todos { id } }' });
    expect(todos.json?.data).toEqual({ todos: [{ id: '1' }, { id: '2' }, { id: '3' }] });
  });
});

describe('request recording', () => {
  it('records method, path, lower-case headers and body in order, on every path', async () => {
    const body = JSON.stringify({ query: '{ me { id } }' });
    await postGraphQL(origin().url, body, { Authorization: 'Bearer alice', 'X-Trace': 't-1' });
    await getGraphQL(origin().url, { query: '{ time }' });
    await (await fetch(new URL('/healthz', origin().url))).text();

    expect(origin().requestCount()).toBe(3);
    const [post, get, other] = origin().requests;
    expect(post).toMatchObject({ method: 'POST', path: '/graphql', body });
    expect(post?.headers).toMatchObject({
      authorization: 'Bearer alice',
      'x-trace': 't-1',
      'content-type': 'application/json',
      'content-length': String(body.length),
    });
    expect(get).toMatchObject({ method: 'GET', path: '/graphql?query=%7B+time+%7D', body: '' });
    expect(other).toMatchObject({ method: 'GET', path: '/healthz' });
  });
});

describe('HTTP framing', () => {
  it('answers a correct content-length, uncompressed whatever the client accepts', async () => {
    await postGraphQL(origin().url, { query: 'mutation { addTodo(title: "Café ☕ für 2 🏃") { id } }' });
    const result = await postGraphQL(
      origin().url,
      { query: '{ todos { title } }' },
      { 'accept-encoding': 'gzip, deflate, br' },
    );
    expect(result.headers['content-encoding']).toBeUndefined();
    expect(result.headers['transfer-encoding']).toBeUndefined();
    expect(result.headers['content-length']).toBe(String(Buffer.byteLength(result.text, 'utf8')));
    expect(result.text).toContain('Café ☕ für 2 🏃');
  });
});
