import { brotliCompressSync, gzipSync } from 'node:zlib';
import { beforeEach, describe, expect, it } from 'vitest';
import type { ForcedResponse } from '../support/origin.js';
import { postGraphQL } from '../support/origin.js';
import { useStack } from '../support/stack.js';

/**
 * A mutation whose answer svc-cache cannot read still invalidates, by the types its root fields
 * can return (docs/graphql-caching.md, Invalidation), through the gateway. The origin's forced
 * answer changes no data, so a MISS after it is the invalidation's doing alone.
 */

const TODO_1 = '{ todo(id: "1") { id title } }';
const USERS = '{ users { id name } }';
const UPDATE_TODO = 'mutation { updateTodo(id: "1", title: "Renamed") { id title } }';

const UNREADABLE: Array<[string, ForcedResponse]> = [
  [
    'an event stream',
    {
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body: 'event: next\ndata: {"data":{"updateTodo":{"id":"1","title":"Renamed"}}}\n\nevent: complete\ndata:\n\n',
    },
  ],
  ['a multipart/mixed answer', { status: 200, headers: { 'content-type': 'multipart/mixed; boundary="-"' }, body: '---\r\n\r\n{}\r\n-----\r\n' }],
  ['a text/plain answer', { status: 200, headers: { 'content-type': 'text/plain' }, body: 'done' }],
  ['JSON that does not parse', { status: 200, headers: { 'content-type': 'application/json' }, body: '{"data":' }],
];

describe.each(['Entity', 'Type', 'None'] as const)('mutationPolicy %s: a mutation whose answer cannot be read', (policy) => {
  const invalidations: unknown[] = [];

  const stack = useStack({ mutationPolicy: policy });
  beforeEach(async () => {
    invalidations.length = 0;
  });

  async function statuses(queries: string[]): Promise<Array<string | undefined>> {
    const found: Array<string | undefined> = [];
    for (const query of queries) found.push((await postGraphQL(stack().url, { query })).headers['svc-cache']);
    return found;
  }

  it.each(UNREADABLE)('%s: invalidates every entry holding a type its root fields return, unless the policy is None', async (_name, answer) => {
    expect(await statuses([TODO_1, USERS])).toEqual(['MISS', 'MISS']);
    stack().origin.setBehaviour({ forcedResponse: answer });
    const mutation = await postGraphQL(stack().url, { query: UPDATE_TODO });
    expect([mutation.headers['svc-cache'], mutation.text]).toEqual(['PASS', answer.body]);
    stack().origin.setBehaviour({ forcedResponse: null });
    expect(await statuses([TODO_1, USERS])).toEqual([policy === 'None' ? 'HIT' : 'MISS', 'HIT']);
  });
});

/**
 * A request svc-cache cannot read may still be a mutation to the origin, which may read it another
 * way (README, Bad input): every reading that finds a mutation invalidates by its root fields' types.
 * The fourth member holds further request headers and what follows the path in the URL.
 */
const UNREAD_REQUESTS: Array<[string, Buffer, string, Sent?]> = [
  [
    'JSON whose bytes are not UTF-8',
    Buffer.concat([Buffer.from('{"query":"mutation { updateTodo(id: \\"1\\", title: \\"Caf'), Buffer.from([0xe9]), Buffer.from(' au lait\\") { id title } }"}')]),
    'application/json',
  ],
  ['JSON sent as text/plain', Buffer.from(JSON.stringify({ query: UPDATE_TODO })), 'text/plain'],
  ['a form', Buffer.from(`query=${encodeURIComponent(UPDATE_TODO)}`), 'application/x-www-form-urlencoded'],
  ['a bare query', Buffer.from(UPDATE_TODO), 'application/graphql'],
  [
    'a named mutation picked by operationName, in a form',
    Buffer.from(`query=${encodeURIComponent(`query Q { todos { id } } ${UPDATE_TODO.replace('mutation', 'mutation M')}`)}&operationName=M`),
    'application/x-www-form-urlencoded',
  ],
  ['gzipped JSON', gzipSync(JSON.stringify({ query: UPDATE_TODO })), 'application/json', { headers: { 'content-encoding': 'gzip' } }],
  ['a brotli-compressed form', brotliCompressSync(`query=${encodeURIComponent(UPDATE_TODO)}`), 'application/x-www-form-urlencoded', { headers: { 'content-encoding': 'br' } }],
  ['JSON in UTF-16LE', Buffer.from(JSON.stringify({ query: UPDATE_TODO }), 'utf16le'), 'application/json; charset=utf-16le'],
  ['JSON in UTF-7 that shifts the keyword', Buffer.from(JSON.stringify({ query: UPDATE_TODO.replace('mutation', '+AG0-utation') })), 'application/json; charset=utf-7'],
  ['a form in UTF-16LE', Buffer.from(`query=${encodeURIComponent(UPDATE_TODO)}`, 'utf16le'), 'application/x-www-form-urlencoded; charset=utf-16le'],
  ['a query in the URL of a POST without a body', Buffer.alloc(0), 'application/json', { search: `?query=${encodeURIComponent(UPDATE_TODO)}` }],
  [
    'a GraphQL multipart request (a file upload), its mutation in the operations field',
    Buffer.from(
      [
        '--upload',
        'Content-Disposition: form-data; name="operations"',
        '',
        JSON.stringify({ query: UPDATE_TODO, variables: { file: null } }),
        '--upload',
        'Content-Disposition: form-data; name="map"',
        '',
        '{"0":["variables.file"]}',
        '--upload',
        'Content-Disposition: form-data; name="0"; filename="a.txt"',
        'Content-Type: text/plain',
        '',
        'hello',
        '--upload--',
        '',
      ].join('\r\n'),
    ),
    'multipart/form-data; boundary=upload',
  ],
  [
    'a mutation in the URL named by operationName, beside a body of another content type',
    Buffer.from('{}'),
    'text/plain',
    { search: `?query=${encodeURIComponent(`query Q { todos { id } } ${UPDATE_TODO.replace('mutation', 'mutation M')}`)}&operationName=M` },
  ],
];

interface Sent {
  headers?: Record<string, string>;
  search?: string;
}

describe('a request svc-cache cannot read that an origin may run as a mutation', () => {
  const stack = useStack({ mutationPolicy: 'Entity' });

  async function send(body: Buffer, contentType: string, { headers = {}, search = '' }: Sent = {}, path = ''): Promise<Response> {
    return fetch(`${stack().url}${path}${search}`, { method: 'POST', headers: { 'content-type': contentType, accept: 'application/json', ...headers }, body: new Uint8Array(body) });
  }

  async function expectPassedAndInvalidating(body: Buffer, contentType: string, sent: Sent | undefined, path = ''): Promise<void> {
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
    expect((await postGraphQL(stack().url, { query: USERS })).headers['svc-cache']).toBe('MISS');
    stack().origin.setBehaviour({ forcedResponse: { status: 200, headers: { 'content-type': 'application/json' }, body: '{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}' } });
    const mutation = await send(body, contentType, sent, path);
    expect([mutation.status, mutation.headers.get('svc-cache')]).toEqual([200, 'PASS']);
    expect(stack().origin.requests.at(-1)?.body).toBe(body.toString());
    stack().origin.setBehaviour({ forcedResponse: null });
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
    expect((await postGraphQL(stack().url, { query: USERS })).headers['svc-cache']).toBe('HIT');
  }

  it.each(UNREAD_REQUESTS)('%s: passes it as sent and invalidates the types its root fields return', async (_name, body, contentType, sent) => {
    await expectPassedAndInvalidating(body, contentType, sent);
  });

  // The demo origin serves /graphql/x as a handler mounted on /graphql as a prefix does (Express's
  // app.use, graphql-upload's middleware before it): the same readings run there.
  it.each(UNREAD_REQUESTS)('%s, sent below the endpoint: invalidates the same', async (_name, body, contentType, sent) => {
    await expectPassedAndInvalidating(body, contentType, sent, '/x');
  });

  // The review: a readable request nested too deep is refused 400; a reading of a body svc-cache
  // cannot read was held to the depth and alias limits but not to the nesting one.
  it('refuses a reading nested too deep, as it refuses a readable request', async () => {
    const nested = `mutation { ${'... { '.repeat(60)}__typename${' }'.repeat(60)} }`;
    const answer = await send(Buffer.from(JSON.stringify({ query: nested })), 'text/plain');
    expect([answer.status, ((await answer.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]?.extensions.code]).toEqual([400, 'QUERY_TOO_DEEP']);
    expect(stack().origin.requestCount()).toBe(0);
  });

  it('refuses a reading that gives a parameter twice, as it refuses a readable request', async () => {
    const repeated = Buffer.from(`{"query":${JSON.stringify(UPDATE_TODO)},"query":"{ todos { id } }"}`);
    const answer = await send(repeated, 'text/plain');
    expect([answer.status, ((await answer.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]?.extensions.code]).toEqual([400, 'AMBIGUOUS_REQUEST']);
    const form = await send(Buffer.from(`query=${encodeURIComponent(UPDATE_TODO)}&query=${encodeURIComponent('{ todos { id } }')}`), 'application/x-www-form-urlencoded');
    expect(form.status).toBe(400);
    const url = await send(Buffer.from('x'), 'text/plain', { search: `?query=${encodeURIComponent(UPDATE_TODO)}&query=${encodeURIComponent('{ todos { id } }')}` });
    expect(url.status).toBe(400);
    expect(stack().origin.requestCount()).toBe(0);
  });

  it('invalidates for a mutation named by an empty operationName when the origin runs it, not when it refuses the name', async () => {
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
    // The demo origin (graphql-js) refuses "" as an unknown name: a request error, no data, nothing ran.
    const refused = await postGraphQL(stack().url, { query: UPDATE_TODO, operationName: '' });
    expect([refused.headers['svc-cache'], refused.text]).toEqual(['PASS', expect.stringMatching(/^\{"errors":/)]);
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('HIT');
    // Some origins take "" for no name, and run it.
    stack().origin.setBehaviour({ forcedResponse: { status: 200, headers: { 'content-type': 'application/json' }, body: '{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}' } });
    const ran = await postGraphQL(stack().url, { query: UPDATE_TODO, operationName: '' });
    stack().origin.setBehaviour({ forcedResponse: null });
    expect(ran.headers['svc-cache']).toBe('PASS');
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
  });

  it('leaves the cache alone when no reading finds a mutation', async () => {
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
    const query = await send(Buffer.from(JSON.stringify({ query: TODO_1 })), 'text/plain');
    expect(query.headers.get('svc-cache')).toBe('PASS');
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('HIT');
  });

  it('empties the store after a POST that names no query but runs one at the origin (a stored document by its id)', async () => {
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
    expect((await postGraphQL(stack().url, { query: USERS })).headers['svc-cache']).toBe('MISS');
    stack().origin.setBehaviour({ forcedResponse: { status: 200, headers: { 'content-type': 'application/json' }, body: '{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}' } });
    const stored = await send(Buffer.from('{"documentId":"rename-todo-1"}'), 'application/json');
    expect([stored.status, stored.headers.get('svc-cache'), await stored.text()]).toEqual([200, 'PASS', '{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}']);
    stack().origin.setBehaviour({ forcedResponse: null });
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
    expect((await postGraphQL(stack().url, { query: USERS })).headers['svc-cache']).toBe('MISS');
  });

  it.each<[string, string, string, string]>([
    ['in a batch', '[{"documentId":"rename-todo-1"}]', 'application/json', '[{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}]'],
    // Hot Chocolate runs a document it knows by `documentId` rather than the text beside it.
    ['beside a query text, in a body svc-cache does not read', '{"query":"{ __typename }","documentId":"rename-todo-1"}', 'text/plain', '{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}'],
    ['beside a query in a batch', `[{"query":${JSON.stringify(USERS)}},{"documentId":"rename-todo-1"}]`, 'application/json', '[{"data":{"users":[]}},{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}]'],
    ['in a body svc-cache does not read', '{"documentId":"rename-todo-1"}', 'text/plain', '{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}'],
    ['whose answer is not one svc-cache reads', '{"documentId":"rename-todo-1"}', 'application/json', 'done'],
    // An alias may name a mutation's field as a query's: root keys tell nothing.
    ['whose mutation aliases its field as a query field', '{"documentId":"rename-todo-1"}', 'application/json', '{"data":{"todo":{"id":"1","title":"Renamed"}}}'],
    ['with an operationName, in a body svc-cache does not read', '{"documentId":"rename-todo-1","operationName":"Rename"}', 'Application/JSON', '{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}'],
    ['with query: null, in a body svc-cache does not read', '{"query":null,"documentId":"rename-todo-1"}', 'text/plain', '{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}'],
    ['answered data: null', '{"documentId":"rename-todo-1"}', 'application/json', '{"data":null,"errors":[{"message":"failed after the write"}]}'],
    ['in query, as envelop reads it', '{"query":"rename-todo-1"}', 'application/json', '{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}'],
    ['in query, in a batch', '[{"query":"rename-todo-1"}]', 'application/json', '[{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}]'],
    ['in query, in a body svc-cache does not read', '{"query":"rename-todo-1"}', 'text/plain', '{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}'],
    // Hot Chocolate reads JSON with trailing commas and comments, and runs what it keeps under an `id`.
    ['beside a text, in a body svc-cache cannot read as JSON', '{"query":"{ __typename }",}', 'application/json', '{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}'],
    ['as Hot Chocolate\'s id, in a body svc-cache does not read', '{"query":"{ __typename }","id":"rename-todo-1"}', 'text/plain', '{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}'],
  ])('empties the store after a stored document sent by its id %s', async (_name, body, contentType, answer) => {
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
    const answerType = answer === 'done' ? 'text/plain' : 'application/json';
    stack().origin.setBehaviour({ forcedResponse: { status: 200, headers: { 'content-type': answerType }, body: answer } });
    const sent = await send(Buffer.from(body), contentType);
    expect([sent.status, sent.headers.get('svc-cache'), await sent.text()]).toEqual([200, 'PASS', answer]);
    stack().origin.setBehaviour({ forcedResponse: null });
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
  });

  it('empties the store after a POST svc-cache does not read whose URL names a stored document, as Hive Gateway reads it', async () => {
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
    stack().origin.setBehaviour({ forcedResponse: { status: 200, headers: { 'content-type': 'application/json' }, body: '{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}' } });
    const sent = await send(Buffer.from('{}'), 'application/graphql+json', { search: '?documentId=rename-todo-1' });
    expect([sent.status, sent.headers.get('svc-cache')]).toEqual([200, 'PASS']);
    stack().origin.setBehaviour({ forcedResponse: null });
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
  });

  it.each<[string, string]>([
    ['a request error (no data), answered 200 as some origins do', '{"errors":[{"message":"Must provide query string."}]}'],
    ['empty data', '{"data":{}}'],
  ])('leaves the store alone after a POST naming no query answered with %s', async (_name, answer) => {
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
    stack().origin.setBehaviour({ forcedResponse: { status: 200, headers: { 'content-type': 'application/json' }, body: answer } });
    const sent = await send(Buffer.from('{"documentId":"todo-1"}'), 'application/json');
    expect([sent.status, sent.headers.get('svc-cache'), await sent.text()]).toEqual([200, 'PASS', answer]);
    stack().origin.setBehaviour({ forcedResponse: null });
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('HIT');
  });

  it('reads the answer to a POST without a body whose URL names a stored document, decided at its headers: no data, no flush', async () => {
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
    const answer = '{"errors":[{"message":"Unknown document."}]}';
    stack().origin.setBehaviour({ forcedResponse: { status: 200, headers: { 'content-type': 'application/json' }, body: answer } });
    const sent = await send(Buffer.alloc(0), 'application/json', { search: '?documentId=unknown' });
    expect([sent.status, sent.headers.get('svc-cache'), await sent.text()]).toEqual([200, 'PASS', answer]);
    stack().origin.setBehaviour({ forcedResponse: null });
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('HIT');
    stack().origin.setBehaviour({ forcedResponse: { status: 200, headers: { 'content-type': 'application/json' }, body: '{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}' } });
    expect((await send(Buffer.alloc(0), 'application/json', { search: '?documentId=rename-todo-1' })).headers.get('svc-cache')).toBe('PASS');
    stack().origin.setBehaviour({ forcedResponse: null });
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
  });

  it('leaves the store alone when the origin refuses a POST that names no query, and for a GET naming none', async () => {
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
    const refused = await send(Buffer.from('{"variables":{}}'), 'application/json');
    expect([refused.status, refused.headers.get('svc-cache')]).toEqual([400, 'PASS']);
    stack().origin.setBehaviour({ forcedResponse: { status: 200, headers: { 'content-type': 'application/json' }, body: '{"data":{"todo":null}}' } });
    const get = await fetch(`${stack().url}?documentId=todo-1`, { headers: { accept: 'application/json' } });
    expect([get.status, get.headers.get('svc-cache')]).toEqual([200, 'PASS']);
    stack().origin.setBehaviour({ forcedResponse: null });
    expect((await postGraphQL(stack().url, { query: TODO_1 })).headers['svc-cache']).toBe('HIT');
  });

  it('refuses a reading over the query size limit, as it refuses a readable request', async () => {
    const tooLarge = `mutation { updateTodo(id: "1", title: "${'x'.repeat(110 * 1024)}") { id } }`;
    const answer = await send(Buffer.from(`query=${encodeURIComponent(tooLarge)}`), 'application/x-www-form-urlencoded');
    expect([answer.status, ((await answer.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]?.extensions.code]).toEqual([400, 'QUERY_TOO_LARGE']);
  });
});
