import { describe, expect, it } from 'vitest';
import { getGraphQL, persistedQueryExtensions, postGraphQL } from '../support/origin.js';
import { startStack, useStack } from '../support/stack.js';

/** Query caching end to end: client -> gateway -> real ext_proc gRPC -> sidecar -> demo origin. */
describe('query caching through the gateway', () => {
  const TODOS = '{ todos { id title done } }';

  const stack = useStack();

  it('answers MISS from the origin, then HIT from the cache with the identical body, one origin call', async () => {
    const direct = await postGraphQL(stack().origin.url, { query: TODOS });
    stack().origin.reset();

    const first = await postGraphQL(stack().url, { query: TODOS });
    const second = await postGraphQL(stack().url, { query: TODOS });

    expect(first.status).toBe(200);
    expect(first.headers['svc-cache']).toBe('MISS');
    expect(first.text).toBe(direct.text);
    expect(first.headers['content-type']).toBe(direct.headers['content-type']);
    expect(second.status).toBe(200);
    expect(second.headers['svc-cache']).toBe('HIT');
    expect(second.headers['age']).toMatch(/^\d+$/);
    expect(second.headers['content-type']).toBe(direct.headers['content-type']);
    expect(second.headers['content-length']).toBe(String(Buffer.byteLength(direct.text)));
    expect(second.text).toBe(first.text);
    expect(stack().origin.requestCount()).toBe(1);
  });

  it('serves a reformatted query (whitespace, comments) from the same entry', async () => {
    await postGraphQL(stack().url, { query: TODOS });
    const reformatted = await postGraphQL(stack().url, {
      query: '# the list\nquery {\n  todos {\n    id\n    title\n    done\n  }\n}\n',
    });
    expect(reformatted.headers['svc-cache']).toBe('HIT');
    expect(stack().origin.requestCount()).toBe(1);
  });

  it('keys on variables: other values miss, the same values in another key order hit', async () => {
    const query = 'query Todos($id: ID!, $other: ID!) { todo(id: $id) { id title } other: todo(id: $other) { id } }';
    const one = await postGraphQL(stack().url, { query, variables: { id: '1', other: '3' } });
    const two = await postGraphQL(stack().url, { query, variables: { id: '2', other: '3' } });
    const oneAgain = await postGraphQL(stack().url, { query, variables: { other: '3', id: '1' } });
    expect([one.headers['svc-cache'], two.headers['svc-cache'], oneAgain.headers['svc-cache']]).toEqual([
      'MISS',
      'MISS',
      'HIT',
    ]);
    expect(one.json?.data).toEqual({ todo: { id: '1', title: expect.any(String) }, other: { id: '3' } });
    expect(two.json?.data).toEqual({ todo: { id: '2', title: expect.any(String) }, other: { id: '3' } });
    expect(oneAgain.text).toBe(one.text);
    expect(stack().origin.requestCount()).toBe(2);
  });

  it("keys a POST body's members other than GraphQL's in their canonical text, and forwards them as sent", async () => {
    const query = JSON.stringify(TODOS);
    const results = [
      await postGraphQL(stack().url, `{"query":${query},"tenant":"x"}`),
      await postGraphQL(stack().url, `{"query":${query},"tenant":"y"}`),
      await postGraphQL(stack().url, `{ "tenant" : "\\u0078", "query":${query} }`),
      await postGraphQL(stack().url, { query: TODOS }),
    ];
    expect(results.map((result) => result.headers['svc-cache'])).toEqual(['MISS', 'MISS', 'HIT', 'MISS']);
    expect(results[2]!.text).toBe(results[0]!.text);
    expect(stack().origin.requestCount()).toBe(3);
  });

  it('carries the other members unchanged to the origin when it rewrites the request: key fields added, a persisted query expanded', async () => {
    const titles = '{ todos { title } }';
    const withKeyFields = await postGraphQL(stack().url, `{"query":${JSON.stringify(titles)},"tenant":{"n":1.0}}`);
    const registered = await postGraphQL(stack().url, { query: TODOS, extensions: persistedQueryExtensions(TODOS) });
    const expanded = await postGraphQL(stack().url, `{"extensions":${JSON.stringify(persistedQueryExtensions(TODOS))},"tenant":{"n":1.0}}`);
    expect([withKeyFields, registered, expanded].map((result) => result.headers['svc-cache'])).toEqual(['MISS', 'MISS', 'MISS']);
    const bodies = stack().origin.requests.map((request) => JSON.parse(request.body) as Record<string, unknown>);
    expect(bodies[0]!['query']).not.toBe(titles);
    expect([bodies[1]!['query'], bodies[2]!['query']]).toEqual([TODOS, TODOS]);
    expect(stack().origin.requests.map((request) => request.body.includes('"tenant":{"n":1.0}'))).toEqual([true, false, true]);
  });

  it('sends an expanded persisted query its other extensions as sent, as the key holds them', async () => {
    await postGraphQL(stack().url, { query: TODOS, extensions: persistedQueryExtensions(TODOS) });
    const reference = JSON.stringify(persistedQueryExtensions(TODOS).persistedQuery);
    const expanded = await postGraphQL(stack().url, `{"extensions":{"persistedQuery":${reference},"sort":{"b":1,"a":2.0}}}`);
    const plain = await postGraphQL(stack().url, `{"query":${JSON.stringify(TODOS)},"extensions":{"sort":{"b":1,"a":2.0}}}`);
    expect([expanded.headers['svc-cache'], plain.headers['svc-cache']]).toEqual(['MISS', 'HIT']);
    expect(stack().origin.requests.at(-1)!.body).toContain('"extensions":{"sort":{"b":1,"a":2.0}}');
  });

  it('caches GET requests, keyed by what CSRF checks read: a GET with a JSON content type does not share a POST\'s entry', async () => {
    // Apollo Server 4 (csrfPrevention), Yoga's CSRF plugin and Mercurius refuse a GET that a page
    // could send cross-site without a preflight, each by its own reading of the content type and its
    // headers, and express-graphql refuses a GET declaring JSON (its empty body is no JSON): such a
    // GET must not be answered from an entry of a request they read otherwise.
    const first = await getGraphQL(stack().url, { query: TODOS });
    const second = await getGraphQL(stack().url, { query: TODOS });
    const post = await postGraphQL(stack().url, { query: TODOS });
    const withJsonType = await getGraphQL(stack().url, { query: TODOS }, { 'content-type': 'application/json' });
    const preflighted = await getGraphQL(stack().url, { query: TODOS }, { 'apollo-require-preflight': 'true' });
    const withJsonTypeAgain = await getGraphQL(stack().url, { query: TODOS }, { 'content-type': 'application/json' });
    const answers = [first, second, post, withJsonType, preflighted, withJsonTypeAgain];
    expect(answers.map((answer) => answer.headers['svc-cache'])).toEqual(['MISS', 'HIT', 'MISS', 'MISS', 'MISS', 'HIT']);
    expect(new Set(answers.map((answer) => answer.text)).size).toBe(1);
    expect(stack().origin.requestCount()).toBe(4);
  });

  it('keys the request\'s Origin, which CORS answers follow', async () => {
    // GraphQL Yoga answers a request without Origin with no access-control-allow-origin and no
    // vary: origin; a browser's cross-origin request must not get that answer.
    const noOrigin = await postGraphQL(stack().url, { query: TODOS });
    const siteA = await postGraphQL(stack().url, { query: TODOS }, { origin: 'https://a.example' });
    const siteAAgain = await postGraphQL(stack().url, { query: TODOS }, { origin: 'https://a.example' });
    const siteB = await postGraphQL(stack().url, { query: TODOS }, { origin: 'https://b.example' });
    expect([noOrigin, siteA, siteAAgain, siteB].map((answer) => answer.headers['svc-cache'])).toEqual(['MISS', 'MISS', 'HIT', 'MISS']);
    expect(stack().origin.requests.map((request) => request.headers['origin'])).toEqual([undefined, 'https://a.example', 'https://b.example']);
  });

  it('stores an answer that varies on Origin, which the key holds', async () => {
    stack().origin.setBehaviour({ headers: { vary: 'Origin' } });
    const first = await postGraphQL(stack().url, { query: TODOS }, { origin: 'https://a.example' });
    const second = await postGraphQL(stack().url, { query: TODOS }, { origin: 'https://a.example' });
    expect([first.headers['svc-cache'], second.headers['svc-cache'], second.headers['vary']]).toEqual(['MISS', 'HIT', 'Origin']);
  });

  it("answers a GET whose preconditions the stored answer meets 304 Not Modified, as its origin would; a POST gets the 200", async () => {
    const lastModified = 'Wed, 21 Oct 2026 07:28:00 GMT';
    stack().origin.setBehaviour({ headers: { etag: '"v1"', 'last-modified': lastModified } });
    const get = (headers: Record<string, string>) => getGraphQL(stack().url, { query: TODOS }, headers);
    const answers = [
      await get({}),
      await get({ 'if-none-match': '"v1"' }),
      await get({ 'if-none-match': '"v0", W/"v1"' }),
      await get({ 'if-none-match': '*' }),
      await get({ 'if-none-match': '"v2"' }),
      await get({ 'if-modified-since': lastModified }),
      await get({ 'if-modified-since': 'Wed, 21 Oct 2026 07:27:59 GMT' }),
      // If-None-Match decides alone when sent.
      await get({ 'if-none-match': '"v2"', 'if-modified-since': lastModified }),
      // The origin evaluates If-Match first, and may answer 412.
      await get({ 'if-match': '"v2"', 'if-none-match': '"v1"' }),
      await postGraphQL(stack().url, { query: TODOS }, { 'if-none-match': '"v1"' }),
    ];
    expect(answers.map((answer) => [answer.status, answer.headers['svc-cache'], answer.text === '' ? 'no body' : 'body'])).toEqual([
      [200, 'MISS', 'body'],
      [304, 'HIT', 'no body'],
      [304, 'HIT', 'no body'],
      [304, 'HIT', 'no body'],
      [200, 'HIT', 'body'],
      [304, 'HIT', 'no body'],
      [200, 'HIT', 'body'],
      [200, 'HIT', 'body'],
      [200, 'PASS', 'body'],
      [200, 'MISS', 'body'],
    ]);
    const notModified = answers[1]!;
    expect([notModified.headers['etag']?.replace(/^W\//, ''), notModified.headers['last-modified'], notModified.headers['content-type'], notModified.headers['content-encoding']]).toEqual([
      '"v1"',
      lastModified,
      undefined,
      undefined,
    ]);
    expect(stack().origin.requestCount()).toBe(3);
  });

  it("keeps a MISS's validators from the origin, whose 304 could not be stored, and meets them from the entry next time", async () => {
    stack().origin.setBehaviour({ headers: { etag: '"v1"' } });
    const validators = { 'if-none-match': '"v1"', 'if-modified-since': 'Wed, 21 Oct 2026 07:28:00 GMT' };
    const answers = [await getGraphQL(stack().url, { query: TODOS }, validators), await getGraphQL(stack().url, { query: TODOS }, validators)];
    expect(answers.map((answer) => [answer.status, answer.headers['svc-cache']])).toEqual([
      [200, 'MISS'],
      [304, 'HIT'],
    ]);
    expect(stack().origin.requests.map((request) => [request.headers['if-none-match'], request.headers['if-modified-since']])).toEqual([[undefined, undefined]]);
    // A request that cannot be stored keeps them: the origin answers it as it would without svc-cache.
    await postGraphQL(stack().url, { query: 'mutation { addTodo(title: "x") { id } }' }, validators);
    expect(stack().origin.requests[1]!.headers['if-none-match']).toBe('"v1"');
  });

  it('keys without Accept: one origin request serves each GraphQL JSON type the client accepts', async () => {
    const json = await postGraphQL(stack().url, { query: TODOS }, { accept: 'application/json' });
    const graphqlResponse = await postGraphQL(stack().url, { query: TODOS }, { accept: 'application/graphql-response+json' });
    const urql = await postGraphQL(stack().url, { query: TODOS }, { accept: 'application/graphql-response+json, application/json, text/event-stream, multipart/mixed' });
    const anything = await postGraphQL(stack().url, { query: TODOS }, { accept: '*/*' });
    // Ties go to the type listed first, and a wildcard decides for the type it covers, as origins negotiate.
    const jsonFirst = await postGraphQL(stack().url, { query: TODOS }, { accept: 'application/json, application/graphql-response+json' });
    const wildcardHigher = await postGraphQL(stack().url, { query: TODOS }, { accept: '*/*;q=0.5, application/json;q=0.1' });
    const withCharset = await postGraphQL(stack().url, { query: TODOS }, { accept: 'application/json; charset=utf-8' });
    const answers = [json, graphqlResponse, urql, anything, jsonFirst, wildcardHigher, withCharset];
    expect(answers.map((result) => [result.headers['svc-cache'], result.headers['content-type']])).toEqual([
      ['MISS', 'application/json; charset=utf-8'],
      ['HIT', 'application/graphql-response+json; charset=utf-8'],
      ['HIT', 'application/graphql-response+json; charset=utf-8'],
      ['HIT', 'application/json; charset=utf-8'],
      ['HIT', 'application/json; charset=utf-8'],
      ['HIT', 'application/graphql-response+json; charset=utf-8'],
      ['HIT', 'application/json; charset=utf-8'],
    ]);
    expect(new Set(answers.map((result) => result.text)).size).toBe(1);
    expect(stack().origin.requestCount()).toBe(1);
  });

  it('sends a client that prefers another type to JSON (a browser) to the origin, and keeps the entry for the others', async () => {
    // GraphQL Yoga and other servers with GraphiQL answer a browser's navigation with an HTML page.
    const browser = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
    // With a JSON content type, so that one entry serves them all.
    const jsonType = { 'content-type': 'application/json' };
    const stored = await getGraphQL(stack().url, { query: TODOS }, { accept: 'application/json', ...jsonType });
    const navigation = await getGraphQL(stack().url, { query: TODOS }, { accept: browser, ...jsonType });
    const axios = await getGraphQL(stack().url, { query: TODOS }, { accept: 'application/json, text/plain, */*', ...jsonType });
    const anything = await getGraphQL(stack().url, { query: TODOS }, { accept: '*/*', ...jsonType });
    expect([stored, navigation, axios, anything].map((result) => [result.status, result.headers['svc-cache']])).toEqual([
      [200, 'MISS'],
      [200, 'PASS'],
      [200, 'HIT'],
      [200, 'HIT'],
    ]);
    expect(navigation.headers['age']).toBeUndefined();
    expect([axios.text, anything.text]).toEqual([stored.text, stored.text]);
    expect(stack().origin.requestCount()).toBe(2);
    expect(stack().origin.requests[1]!.headers['accept']).toBe(browser);
  });

  it('sends a GET naming text/html anywhere to the origin, as Yoga answers it with GraphiQL; a POST naming it is a HIT', async () => {
    const jsonType = { 'content-type': 'application/json' };
    const stored = await getGraphQL(stack().url, { query: TODOS }, { accept: 'application/json', ...jsonType });
    const storedPost = await postGraphQL(stack().url, { query: TODOS }, { accept: 'application/json' });
    const answers = [
      await getGraphQL(stack().url, { query: TODOS }, { accept: 'application/json, text/html', ...jsonType }),
      await getGraphQL(stack().url, { query: TODOS }, { accept: 'Text/HTML;q=0, application/json', ...jsonType }),
      // Apollo Server 4 picks text/html among its types for this one, and answers its landing page.
      await getGraphQL(stack().url, { query: TODOS }, { accept: 'text/*, */*;q=0.5', ...jsonType }),
      await postGraphQL(stack().url, { query: TODOS }, { accept: 'application/json, text/html' }),
    ];
    expect([stored, storedPost, ...answers].map((answer) => answer.headers['svc-cache'])).toEqual(['MISS', 'MISS', 'PASS', 'PASS', 'PASS', 'HIT']);
    expect(stack().origin.requestCount()).toBe(5);
  });

  it('passes mutations to the origin every time with svc-cache: PASS', async () => {
    const mutation = 'mutation { addTodo(title: "write tests") { id title done } }';
    const first = await postGraphQL(stack().url, { query: mutation });
    const second = await postGraphQL(stack().url, { query: mutation });
    expect(first.status).toBe(200);
    expect(first.headers['svc-cache']).toBe('PASS');
    expect(second.headers['svc-cache']).toBe('PASS');
    expect(first.json?.data).toEqual({ addTodo: { id: expect.any(String), title: 'write tests', done: false } });
    expect(second.json?.data?.addTodo).not.toEqual(first.json?.data?.addTodo);
    expect(stack().origin.requestCount()).toBe(2);
  });

  it('refuses a mutation over GET itself with 405 and never forwards it', async () => {
    const response = await getGraphQL(stack().url, { query: 'mutation { addTodo(title: "x") { id } }' });
    expect(response.status).toBe(405);
    expect(response.headers['allow']).toBe('POST');
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.json).toEqual({
      errors: [{ message: 'Mutations cannot be sent with GET; use POST', extensions: { code: 'METHOD_NOT_ALLOWED' } }],
    });
    expect(stack().origin.requestCount()).toBe(0);
  });

  it('does not store answers with GraphQL errors: the client gets the origin answer each time', async () => {
    const query = '{ todos { id nope } }';
    const direct = await postGraphQL(stack().origin.url, { query });
    stack().origin.reset();
    const first = await postGraphQL(stack().url, { query });
    const second = await postGraphQL(stack().url, { query });
    expect(first.status).toBe(direct.status);
    expect(first.text).toBe(direct.text);
    expect(first.headers['svc-cache']).toBe('PASS');
    expect(second.headers['svc-cache']).toBe('PASS');
    expect(stack().origin.requestCount()).toBe(2);
  });

  it('passes what it cannot interpret to the origin untouched and returns the origin answer', async () => {
    for (const body of ['{not json', '[1,2]', '{"query": 42}', '{"query":"{ todos { id }","variables":[]}']) {
      const direct = await postGraphQL(stack().origin.url, body);
      const through = await postGraphQL(stack().url, body);
      expect(through.status, body).toBe(direct.status);
      expect(through.text, body).toBe(direct.text);
      expect(through.headers['content-type'], body).toBe(direct.headers['content-type']);
      expect(through.headers['svc-cache'], body).toBe('PASS');
    }
  });

  it('passes a query that matches no caching rule', async () => {
    const local = await startStack({ rules: [{ types: { Query: ['products'] }, maxAge: 60 }] });
    try {
      const first = await postGraphQL(local.url, { query: TODOS });
      const second = await postGraphQL(local.url, { query: TODOS });
      const products = await postGraphQL(local.url, { query: '{ products { sku } }' });
      const productsAgain = await postGraphQL(local.url, { query: '{ products { sku } }' });
      expect([first, second, products, productsAgain].map((r) => r.headers['svc-cache'])).toEqual([
        'PASS',
        'PASS',
        'MISS',
        'HIT',
      ]);
    } finally {
      await local.close();
    }
  });
});
