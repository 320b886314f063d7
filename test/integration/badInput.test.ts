import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { getGraphQL, persistedQueryExtensions, postGraphQL } from '../support/origin.js';
import { useStack } from '../support/stack.js';

/**
 * Bad input (README "Bad input"): what svc-cache cannot interpret reaches the origin untouched and
 * uncached, so the client gets the origin's own answer; what svc-cache owns gets its own
 * GraphQL-shaped error. After every case the process still serves, and nothing was stored.
 */

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

/** Sends bytes as they are, with the given content type, where fetch would not let us. */
function sendRaw(url: string, body: Buffer, headers: Record<string, string>): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', headers: { ...headers, 'content-length': String(body.length) } });
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: Object.fromEntries(Object.entries(response.headers).map(([k, v]) => [k, String(v)])),
          text: Buffer.concat(chunks).toString('latin1'),
        }),
      );
    });
    request.on('error', reject);
    request.end(body);
  });
}

describe('bad input through the gateway', () => {
  const stack = useStack({
    scopes: { AUTHENTICATED: 'header:authorization' },
    rules: [
      { types: ['Query'], maxAge: 60 },
      { types: { Query: ['me'] }, maxAge: 60, scope: 'AUTHENTICATED' },
    ],
    limits: { maxRequestBodyBytes: 64 * 1024, maxQueryBytes: 2048, maxDepth: 5, maxAliases: 3 },
  });

  /** After any bad request the sidecar still caches: MISS then HIT. */
  async function stillServing(): Promise<void> {
    const query = { query: `{ todo(id: "${Math.ceil(Math.random() * 3)}") { id } }` };
    await stack().sidecar.store.invalidateAll();
    expect((await postGraphQL(stack().url, query)).headers['svc-cache']).toBe('MISS');
    expect((await postGraphQL(stack().url, query)).headers['svc-cache']).toBe('HIT');
  }

  it.each<[string, Buffer, string]>([
    ['a body that is not JSON', Buffer.from('{"query": '), 'application/json'],
    ['JSON that is not an object', Buffer.from('"{ todos { id } }"'), 'application/json'],
    ['a batch (JSON array)', Buffer.from('[{"query":"{ todos { id } }"},{"query":"{ users { id } }"}]'), 'application/json'],
    ['query that is not a string', Buffer.from('{"query":{"todos":true}}'), 'application/json'],
    ['variables that are not an object', Buffer.from('{"query":"{ todos { id } }","variables":"id=1"}'), 'application/json'],
    ['an unknown operationName', Buffer.from('{"query":"query A { todos { id } }","operationName":"B"}'), 'application/json'],
    ['several operations and no operationName', Buffer.from('{"query":"query A { todos { id } } query B { users { id } }"}'), 'application/json'],
    ['a syntax error', Buffer.from('{"query":"{ todos { id "}'), 'application/json'],
    ['binary garbage', Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x9c, 0x80, 0x7b, 0x22]), 'application/json'],
    ['an unsupported content type', Buffer.from('{ todos { id } }'), 'text/plain'],
    ['a form body', Buffer.from('query=%7B+todos+%7B+id+%7D+%7D'), 'application/x-www-form-urlencoded'],
  ])('passes %s to the origin untouched and returns its own answer', async (_name, body, contentType) => {
    const headers = { 'content-type': contentType, accept: 'application/json' };
    const direct = await sendRaw(stack().origin.url, body, headers);
    stack().origin.reset();
    const first = await sendRaw(stack().url, body, headers);
    const second = await sendRaw(stack().url, body, headers);
    for (const answer of [first, second]) {
      expect(answer.status).toBe(direct.status);
      expect(answer.text).toBe(direct.text);
      expect(answer.headers['content-type']).toBe(direct.headers['content-type']);
      expect(answer.headers['svc-cache']).toBe('PASS');
    }
    expect(stack().origin.requestCount()).toBe(2);
    expect(Buffer.from(stack().origin.requests[0]!.body, 'utf8').equals(Buffer.from(body.toString('utf8')))).toBe(true);
    await stillServing();
  });

  it('passes a GET whose GraphQL parameter holds a raw ;, which some origins split on, to the origin every time', async () => {
    const url = `${stack().url}?query=${encodeURIComponent('{ todos { id } } #')};variables=%7B%7D`;
    const direct = await fetch(url.replace(stack().url, stack().origin.url));
    stack().origin.reset();
    const answers = [await fetch(url), await fetch(url)];
    for (const through of answers) {
      expect([through.status, await through.text(), through.headers.get('svc-cache')]).toEqual([direct.status, await direct.clone().text(), 'PASS']);
    }
    expect(stack().origin.requestCount()).toBe(2);
    expect(stack().origin.requests.map((request) => request.path)).toEqual([url.replace(stack().url, '/graphql'), url.replace(stack().url, '/graphql')]);
    await stillServing();
  });

  it('refuses a GET that an origin splitting on ; reads as a mutation (405), or as two queries (400)', async () => {
    const mutation = encodeURIComponent('mutation { addTodo(title: "x") { id } }');
    const refusal = async (search: string) => {
      const answer = await fetch(`${stack().url}?${search}`, { headers: { accept: 'application/json' } });
      return [answer.status, ((await answer.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]?.extensions.code];
    };
    expect(await refusal(`x=1;query=${mutation}`)).toEqual([405, 'METHOD_NOT_ALLOWED']);
    expect(await refusal(`query=${encodeURIComponent('{ todos { id } } #')};query=${mutation}`)).toEqual([400, 'AMBIGUOUS_REQUEST']);
    expect(stack().origin.requestCount()).toBe(0);
  });

  it('passes a GET whose GraphQL parameters origins read differently, and still refuses a mutation in one', async () => {
    const query = encodeURIComponent('{ todos { id } }');
    for (const search of [`query=${query}&query=${query}`, `query=${query}&variables=`, `query=${query}&variables=null`, `query=${query}&extensions=`]) {
      const answer = await fetch(`${stack().url}?${search}`, { headers: { accept: 'application/json' } });
      expect([search, answer.status, answer.headers.get('svc-cache')]).toEqual([search, 200, 'PASS']);
    }
    expect(stack().origin.requestCount()).toBe(4);
    const mutation = encodeURIComponent('mutation { addTodo(title: "x") { id } }');
    const refused = await fetch(`${stack().url}?query=${mutation}&query=${mutation}`, { headers: { accept: 'application/json' } });
    expect(refused.status).toBe(405);
    expect(stack().origin.requestCount()).toBe(4);
  });

  it('passes a GET with variables that are not JSON', async () => {
    const url = `${stack().url}?query=${encodeURIComponent('{ todos { id } }')}&variables=%7Bnope`;
    const direct = await fetch(url.replace(stack().url, stack().origin.url));
    stack().origin.reset();
    const through = await fetch(url);
    expect(through.status).toBe(direct.status);
    expect(await through.text()).toBe(await direct.text());
    expect(through.headers.get('svc-cache')).toBe('PASS');
    expect(stack().origin.requestCount()).toBe(1);
  });

  it.each<[string, () => Promise<{ status: number; json: unknown; headers: Record<string, string> }>, number, string, string]>([
    ['a mutation over GET', () => getGraphQL(stack().url, { query: 'mutation { addTodo(title: "x") { id } }' }), 405, 'METHOD_NOT_ALLOWED', 'Mutations cannot be sent with GET; use POST'],
    ['a mutation over GET with an empty operationName', () => getGraphQL(stack().url, { query: 'mutation { addTodo(title: "x") { id } }', operationName: '' }), 405, 'METHOD_NOT_ALLOWED', 'Mutations cannot be sent with GET; use POST'],
    ['a body over limits.maxRequestBodyBytes', () => postGraphQL(stack().url, { query: `{ todos { id } } #${'x'.repeat(70 * 1024)}` }), 413, 'PAYLOAD_TOO_LARGE', 'Request body is larger than 65536 bytes'],
    ['a query over limits.maxQueryBytes', () => postGraphQL(stack().url, { query: `{ todos { id } } #${'x'.repeat(3000)}` }), 400, 'QUERY_TOO_LARGE', 'Query is 3018 bytes; the limit is 2048'],
    ['a query deeper than limits.maxDepth', () => postGraphQL(stack().url, { query: '{ users { todos { author { todos { author { todos { id } } } } } } }' }), 400, 'QUERY_TOO_DEEP', 'Query is deeper than 5 levels'],
    ['depth hidden in fragments', () => postGraphQL(stack().url, { query: '{ users { ...U } } fragment U on User { todos { author { todos { ...T } } } } fragment T on Todo { author { todos { id } } }' }), 400, 'QUERY_TOO_DEEP', 'Query is deeper than 5 levels'],
    // An outside audit: a text nested past what graphql-js's parser could recurse read as a syntax
    // error and went to the origin unchecked; its answer then emptied the store.
    ['brackets nested past twice the selection sets\' limit', () => postGraphQL(stack().url, { query: `{ todos(first: ${'['.repeat(70)}1${']'.repeat(70)}) { id } }` }), 400, 'QUERY_TOO_DEEP', 'Query nests brackets ({, [, () more than 64 deep, the limit'],
    ['a mutation over GET behind such brackets', () => getGraphQL(stack().url, { query: `mutation { addTodo(title: "x") { id } } query Q { todos(first: ${'['.repeat(70)}1${']'.repeat(70)}) { id } }`, operationName: 'Q' }), 400, 'QUERY_TOO_DEEP', 'Query nests brackets ({, [, () more than 64 deep, the limit'],
    ['more aliases than limits.maxAliases', () => postGraphQL(stack().url, { query: '{ a: todos { id } b: todos { id } c: todos { id } d: todos { id } }' }), 400, 'TOO_MANY_ALIASES', 'Query has more than 3 aliases'],
    ['aliases multiplied by fragment spreads', () => postGraphQL(stack().url, { query: '{ todos { ...F } users { todos { ...F } } } fragment F on Todo { x: id y: title }' }), 400, 'TOO_MANY_ALIASES', 'Query has more than 3 aliases'],
  ])('answers %s itself, never forwarded', async (_name, send, status, code, message) => {
    const response = await send();
    expect(response.status).toBe(status);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.json).toEqual({ errors: [{ message, extensions: { code } }] });
    expect(stack().origin.requestCount()).toBe(0);
    await stillServing();
  });

  it.each([
    ['an empty operationName, which origins read differently', { 'content-type': 'application/json' }, JSON.stringify({ query: '{ todos { id } }', operationName: '' })],
    ['a JSON body in another charset', { 'content-type': 'application/json; charset=latin1' }, JSON.stringify({ query: '{ todos { id } }' })],
    ['a JSON body with another media type parameter', { 'content-type': 'application/json; foo=bar' }, JSON.stringify({ query: '{ todos { id } }' })],
  ])('passes %s to the origin, even when the query is cached', async (_name, headers, body) => {
    expect((await postGraphQL(stack().url, { query: '{ todos { id } }' })).headers['svc-cache']).toMatch(/^(MISS|HIT)$/);
    stack().origin.reset();
    const through = await fetch(stack().url, { method: 'POST', headers: { accept: 'application/json', ...headers }, body });
    expect(through.headers.get('svc-cache')).toBe('PASS');
    expect(stack().origin.requestCount()).toBe(1);
    expect((await postGraphQL(stack().url, { query: '{ todos { id } }' }, { 'content-type': 'application/json; charset=UTF-8' })).headers['svc-cache']).toBe('HIT');
  });

  it.each(['todos { id }', 'todos { title }'])(
    'never answers a document whose other operation is invalid as its valid one alone (%s, a key field added or not): the origin validates the whole document',
    async (selection) => {
      await postGraphQL(stack().url, { query: `query A { ${selection} }`, operationName: 'A' });
      expect((await postGraphQL(stack().url, { query: `query A { ${selection} }`, operationName: 'A' })).headers['svc-cache']).toBe('HIT');
      const withInvalid = { query: `query A { ${selection} } query B { nope }`, operationName: 'A' };
      const direct = await postGraphQL(stack().origin.url, withInvalid);
      for (let attempt = 0; attempt < 2; attempt += 1) {
        const through = await postGraphQL(stack().url, withInvalid);
        expect(through.headers['svc-cache']).not.toBe('HIT');
        expect([through.status, through.text]).toEqual([direct.status, direct.text]);
      }
    },
  );

  it('never registers a persisted query too long to serve', async () => {
    const query = `{ todos { id } } #${'x'.repeat(3000)}`;
    const extensions = persistedQueryExtensions(query);
    const sent = await postGraphQL(stack().url, { query, extensions });
    expect([sent.status, sent.json?.errors?.[0]?.extensions?.code]).toEqual([400, 'QUERY_TOO_LARGE']);
    const byHash = await postGraphQL(stack().url, { extensions });
    expect(byHash.json?.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect(stack().origin.requestCount()).toBe(0);
  });

  it('keys a scope on a very large header value by its hash, and Envoy refuses headers over 60 KiB', async () => {
    // Under the demo origin's own 16 KiB header limit (Node's default), far over any real token.
    const large = `Bearer ${'a'.repeat(12 * 1024)}`;
    const first = await postGraphQL(stack().url, { query: '{ me { id } }' }, { authorization: large });
    const second = await postGraphQL(stack().url, { query: '{ me { id } }' }, { authorization: large });
    expect([first.status, first.headers['svc-cache'], second.headers['svc-cache']]).toEqual([200, 'MISS', 'HIT']);

    const tooLarge = await postGraphQL(stack().url, { query: '{ me { id } }' }, { authorization: `Bearer ${'a'.repeat(70 * 1024)}` });
    expect(tooLarge.status).toBe(431);
    await stillServing();
  });
});
