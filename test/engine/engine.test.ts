import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { buildSchema } from 'graphql';
import { pino } from 'pino';
import { MAX_REWRITTEN_PATH_BYTES } from '../../src/extproc/envoyLimits.js';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { configSchema, type Config } from '../../src/config/schema.js';
import { DecisionEngine, type Exchange, type RequestDecision, type RequestHead } from '../../src/engine/engine.js';
import { silentLogger } from '../../src/observability/log.js';
import { MemoryPersistedQueryRegistry } from '../../src/apq/index.js';
import { MemoryStore } from '../../src/store/memory.js';
import { UnconfirmedInvalidation } from '../../src/store/types.js';
import { unitEngineDependencies } from '../support/engineDependencies.js';
import { demoSchemaSDL } from '../support/origin.js';

/** The decision engine alone: no gRPC, no HTTP, a real in-memory store and a controllable clock. */

const schema = buildSchema(demoSchemaSDL);
const ORIGIN_BODY = Buffer.from('{"data":{"todos":[{"id":"1"}]}}');
const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json; charset=utf-8']];
const USERS_HASH = createHash('sha256').update('{ users { id name } }').digest('hex');

function config(input: Record<string, unknown> = {}): Config {
  return configSchema.parse({
    origin: { url: 'http://origin.test/graphql' },
    rules: [{ types: ['Query'], maxAge: 60 }],
    ...input,
  });
}

function post(query: unknown, headers: Array<[string, string]> = []): { head: RequestHead; body: Buffer } {
  const body = Buffer.from(JSON.stringify(query));
  return {
    head: {
      method: 'POST',
      path: '/graphql',
      headers: [[':method', 'POST'], [':path', '/graphql'], ['content-type', 'application/json'], ...headers],
      hasBody: true,
    },
    body,
  };
}

describe('DecisionEngine', () => {
  let now: number;
  let current: Config;
  let engine: DecisionEngine;
  let store: MemoryStore;

  const build = (input: Record<string, unknown> = {}) => {
    current = config(input);
    store = new MemoryStore({ maxBytes: 1024 * 1024 });
    engine = new DecisionEngine(unitEngineDependencies(() => ({ config: current, schema }), store, () => now));
  };

  /** A decision with what it left on its exchange: the plan when forwarded, the outcome when answered. */
  type Decided = (RequestDecision & { kind: 'respond'; status: string | undefined }) | (RequestDecision & { kind: 'forward'; plan: NonNullable<Exchange['plan']> }) | { kind: 'need-body' };
  const withExchange = (decision: RequestDecision | { kind: 'need-body' }, exchange: Exchange): Decided => {
    if (decision.kind === 'respond') return { ...decision, status: exchange.summary().outcome };
    if (decision.kind === 'forward') return { ...decision, plan: exchange.plan! };
    return decision;
  };

  /** The request decided on its own exchange, its body given (the request body phase). */
  async function decide(head: RequestHead, body: Buffer, on: DecisionEngine = engine): Promise<Decided> {
    const exchange = on.begin(head);
    return withExchange(await on.requestBody(exchange, body), exchange);
  }

  /** The request decided on its headers alone (the request headers phase). */
  async function decideHead(head: RequestHead): Promise<Decided> {
    const exchange = engine.begin(head);
    return withExchange(await engine.requestHead(exchange), exchange);
  }

  /** Runs a request through the engine and, when forwarded, answers it with `origin`. */
  async function roundTrip(
    request: { head: RequestHead; body: Buffer },
    origin: { status?: number; headers?: Array<[string, string]>; body?: Buffer } = {},
  ): Promise<{ decision: RequestDecision; status: string | undefined; headers: Record<string, string> }> {
    const exchange = engine.begin(request.head);
    const decision = await engine.requestBody(exchange, request.body);
    if (decision.kind === 'respond') {
      return { decision, status: exchange.summary().outcome, headers: Object.fromEntries(decision.response.headers) };
    }
    const responseHeaders = [[':status', String(origin.status ?? 200)] as [string, string], ...(origin.headers ?? JSON_HEADERS)];
    const head = await engine.responseHead(exchange, origin.status ?? 200, responseHeaders, false);
    if (!head.wantsBody) return { decision, status: 'PASS', headers: Object.fromEntries(head.headers.set) };
    const body = await engine.responseBody(exchange, origin.body ?? ORIGIN_BODY);
    return { decision, status: exchange.summary().outcome, headers: Object.fromEntries(body.headers.set) };
  }

  beforeEach(() => {
    now = 1_700_000_000_000;
    build();
  });

  it("stores no answer to a request whose Cache-Control says no-store, but answers it from the cache (RFC 9111 section 5.2.1.5)", async () => {
    const noStore = post({ query: '{ todos { id } }' }, [['cache-control', 'No-Store']]);
    expect((await roundTrip(noStore)).status).toBe('PASS');
    expect((await roundTrip(post({ query: '{ todos { id } }' }))).status).toBe('MISS');
    expect(await decide(noStore.head, noStore.body)).toMatchObject({ kind: 'respond', status: 'HIT' });
  });

  it('misses, stores, then hits with the stored bytes, content type and age', async () => {
    const request = post({ query: '{ todos { id } }' });
    expect((await roundTrip(request)).status).toBe('MISS');
    now += 5_500;
    const hit = await decide(request.head, request.body);
    expect(hit.kind).toBe('respond');
    if (hit.kind !== 'respond') return;
    expect(hit.status).toBe('HIT');
    expect(hit.response.status).toBe(200);
    expect(hit.response.body).toEqual(ORIGIN_BODY);
    expect(hit.response.headers).toEqual([
      ['content-type', 'application/json; charset=utf-8'],
      ['svc-cache', 'HIT'],
      ['age', '5'],
    ]);
  });

  it("does not store an answer holding objects under a field its schema lacks (the origin's is newer)", async () => {
    const request = post({ query: '{ todos { id newField { id } } }' });
    const miss = await roundTrip(request, { body: Buffer.from('{"data":{"todos":[{"id":"1","newField":{"id":"u9"}}]}}') });
    expect(miss.status).toBe('PASS');
    expect((await decide(request.head, request.body)).kind).toBe('forward');
    const scalar = post({ query: '{ todos { id newScalar } }' });
    expect((await roundTrip(scalar, { body: Buffer.from('{"data":{"todos":[{"id":"1","newScalar":"x"}]}}') })).status).toBe('MISS');
  });

  it('misses again once maxAge has passed', async () => {
    const request = post({ query: '{ todos { id } }' });
    await roundTrip(request);
    now += 60_001;
    expect((await decide(request.head, request.body)).kind).toBe('forward');
  });

  it('needs the body of a POST and decides a GET on its headers', async () => {
    const { head } = post({ query: '{ todos { id } }' });
    expect(await decideHead(head)).toEqual({ kind: 'need-body' });
    const get = await decideHead({
      method: 'GET',
      path: `/graphql?query=${encodeURIComponent('{ todos { id } }')}`,
      headers: [],
      hasBody: false,
    });
    expect(get.kind).toBe('forward');
    if (get.kind === 'forward') expect(get.plan.kind).toBe('store');
  });

  it('answers 413 itself for a body over limits.maxRequestBodyBytes, from content-length or the body', async () => {
    build({ limits: { maxRequestBodyBytes: 64 } });
    const large = post({ query: `{ todos { id } } ${'#'.repeat(100)}` });
    const byHeader = await decideHead({
      ...large.head,
      headers: [...large.head.headers, ['content-length', String(large.body.length)]],
    });
    const byBody = await decide(large.head, large.body);
    for (const decision of [byHeader, byBody]) {
      expect(decision.kind).toBe('respond');
      if (decision.kind !== 'respond') continue;
      expect(decision.response.status).toBe(413);
      expect(JSON.parse(decision.response.body.toString())).toEqual({
        errors: [{ message: 'Request body is larger than 64 bytes', extensions: { code: 'PAYLOAD_TOO_LARGE' } }],
      });
    }
  });

  it("passes a POST naming Hot Chocolate's batchOperations as one that may run operations svc-cache cannot see", async () => {
    const operation = { query: 'query A { todos { id } } mutation B { deleteTodo(id: "1") }', operationName: 'A' };
    // However the body reads: alone, as a batch of one, under a content type svc-cache does not read, at a variant path.
    for (const [path, body, contentType] of [
      ['/graphql?batchOperations=[A,B]', operation, 'application/json'],
      ['/graphql?x=1&BatchOperations=%5BA%5D', operation, 'application/json'],
      ['/graphql?batchOperations=[A,B]', [operation], 'application/json'],
      ['/graphql?batchOperations=[A,B]', operation, 'application/json; foo=bar'],
      ['/graphql/?batchOperations=[A,B]', operation, 'application/json'],
    ] as const) {
      const request = post(body, [['content-type', contentType]]);
      request.head.headers = request.head.headers.filter(([name, value]) => name !== 'content-type' || value === contentType);
      request.head.path = path;
      const decision = await decide(request.head, request.body);
      expect(decision, `${path} ${contentType}`).toEqual({ kind: 'forward', requestHeaders: { set: [], remove: [] }, plan: { kind: 'pass', reason: 'batch', unseen: { maxResponseBodyBytes: 10_000_000 } } });
    }
    // A document of queries alone changes nothing, and a body over the limit is refused first.
    const queries = post({ query: 'query A { todos { id } } query B { users { id } }', operationName: 'A' });
    queries.head.path = '/graphql?batchOperations=[A,B]';
    expect(await decide(queries.head, queries.body)).toEqual({ kind: 'forward', requestHeaders: { set: [], remove: [] }, plan: { kind: 'pass', reason: 'batch' } });
    // A review: held to the limits of a plain POST before its text is parsed, and a text beside a
    // document id may run that document instead, as on a plain POST.
    const deep = post({ query: `query A { todos(first: ${'['.repeat(200)}1${']'.repeat(200)}) { id } }` });
    deep.head.path = '/graphql?batchOperations=[A]';
    expect(await decide(deep.head, deep.body)).toMatchObject({ kind: 'respond', status: 'ERROR', response: { status: 400 } });
    const besideId = post({ query: 'query A { todos { id } }', documentId: 'abc' });
    besideId.head.path = '/graphql?batchOperations=[A]';
    expect(await decide(besideId.head, besideId.body)).toMatchObject({ kind: 'forward', plan: { kind: 'pass', reason: 'query-beside-document-id', unseen: {} } });
    build({ limits: { maxRequestBodyBytes: 64 } });
    const large = post({ ...operation, padding: 'x'.repeat(100) });
    large.head.path = '/graphql?batchOperations=[A,B]';
    expect(await decide(large.head, large.body)).toMatchObject({ kind: 'respond', response: { status: 413 } });
  });

  it.each([
    // Whatever the origin runs of a document without mutations changes nothing.
    ['an unknown operationName', { query: 'query A { todos { id } }', operationName: 'B' }, 'unknown-operation'],
    ['several queries without a name', { query: 'query A { todos { id } } query B { users { id } }' }, 'unknown-operation'],
    ['a subscription', { query: 'subscription { x }' }, 'subscription'],
  ])('passes %s', async (_name, body, reason) => {
    const request = post(body);
    const decision = await decide(request.head, request.body);
    expect(decision).toEqual({ kind: 'forward', requestHeaders: { set: [], remove: [] }, plan: { kind: 'pass', reason } });
  });

  it.each([
    ['with no query', { extensions: {} }, 'no-query'],
    ['whose query does not parse (a stored document\'s id, to envelop)', { query: '{ todos { id }' }, 'syntax-error'],
    // Hot Chocolate runs several operations of a document that `batchOperations` names in the URL.
    ['with an unknown operationName, beside a mutation', { query: 'query A { todos { id } } mutation M { deleteTodo(id: "1") }', operationName: 'B' }, 'unknown-operation'],
    ['with several operations and no name, one a mutation', { query: 'query A { todos { id } } mutation B { deleteTodo(id: "1") }' }, 'unknown-operation'],
  ])('passes a POST %s as one that may run an operation svc-cache cannot see', async (_name, body, reason) => {
    const request = post(body);
    const decision = await decide(request.head, request.body);
    expect(decision).toEqual({ kind: 'forward', requestHeaders: { set: [], remove: [] }, plan: { kind: 'pass', reason, unseen: { maxResponseBodyBytes: 10_000_000 } } });
  });

  it.each([
    ['an encoded answer, decided at its headers', [...JSON_HEADERS, ['content-encoding', 'gzip']], false],
    ['an event stream, decided at its headers', [['content-type', 'text/event-stream']], false],
    ['a JSON body that does not parse', JSON_HEADERS, true],
  ] as Array<[string, Array<[string, string]>, boolean]>)(
    "invalidates a mutation's root field types when its answer is %s",
    async (_name, headers, readsBody) => {
      build({ mutationPolicy: 'Entity' });
      const query = post({ query: '{ todos { id } }' });
      expect((await roundTrip(query)).status).toBe('MISS');
      const mutation = post({ query: 'mutation { updateUser(id: "u1", name: "x") { id } search: addTodo(title: "y") { id } }' });
      const exchange = engine.begin(mutation.head);
      await engine.requestBody(exchange, mutation.body);
      const head = await engine.responseHead(exchange, 200, headers, false);
      expect(head.wantsBody).toBe(readsBody);
      if (readsBody) await engine.responseBody(exchange, Buffer.from('{"data":'));
      expect(exchange.summary()).toMatchObject({ outcome: 'PASS', passReason: 'mutation' });
      expect((await roundTrip(query)).status).toBe('MISS');
    },
  );

  it('retries an invalidation the store failed, so the entries the mutation changed go once it can', async () => {
    build({ mutationPolicy: 'Entity' });
    const query = post({ query: '{ todos { id } }' });
    expect((await roundTrip(query)).status).toBe('MISS');
    const failOnce = vi.spyOn(store, 'invalidate').mockRejectedValueOnce(new Error('Command timed out'));
    const mutation = post({ query: 'mutation { updateTodo(id: "1", title: "x") { id } }' });
    expect((await roundTrip(mutation, { body: Buffer.from('{"data":{"updateTodo":{"id":"1"}}}') })).status).toBe('PASS');
    expect([(await roundTrip(query)).status, engine.invalidationsPending]).toEqual(['HIT', true]);
    await vi.waitFor(() => expect(engine.invalidationsPending).toBe(false), { timeout: 2_000, interval: 20 });
    expect(failOnce.mock.calls).toEqual([[['e:Todo:1', 'u:Todo']], [['e:Todo:1', 'u:Todo']]]);
    expect((await roundTrip(query)).status).toBe('MISS');
  });

  // An outside audit: with the reference forwarded, an origin with APQ of its own refuses a hash not
  // spelt as the lower-case SHA-256, and svc-cache served the upper-case one the other's answer.
  it('keys a persisted query as sent when it is forwarded as the reference, and as the text when it is expanded', async () => {
    const todosHash = createHash('sha256').update('{ todos { id } }').digest('hex');
    const reference = (hash: string) => ({ query: '{ todos { id } }', extensions: { persistedQuery: { version: 1, sha256Hash: hash } } });
    for (const [forwardPersistedQuery, statuses] of [
      [true, ['MISS', 'MISS', 'HIT']],
      [false, ['MISS', 'HIT', 'HIT']],
    ] as const) {
      build({ apq: { forwardPersistedQuery } });
      const seen = [];
      for (const hash of [todosHash, todosHash.toUpperCase(), todosHash]) seen.push((await roundTrip(post(reference(hash)))).status);
      expect(seen, String(forwardPersistedQuery)).toEqual(statuses);
    }
  });

  // An outside audit: the key held `:authority` lower-cased without `:80`, and an origin that echoes
  // the spelling it got (Yoga's `request.url`) had one client's spelling served to the others.
  it('keys the host as sent: another host, its case and a default port make other entries', async () => {
    build();
    const query = { query: '{ todos { id } }' };
    const statuses = [];
    for (const authority of ['api.example.com', 'API.example.com', 'api.example.com:80', 'b.example.com', 'api.example.com', 'API.example.com']) {
      statuses.push((await roundTrip(post(query, [[':authority', authority], [':scheme', 'http']]))).status);
    }
    expect(statuses).toEqual(['MISS', 'MISS', 'MISS', 'MISS', 'HIT', 'HIT']);
  });

  // The Redis failure audit: a Redis back with its data (a restart from a snapshot) served the entries
  // a failed invalidation named until its next backoff step, up to 5 s later.
  it('retries a failed invalidation as soon as the store connects again, not at its next backoff step', async () => {
    const onReconnect = vi.spyOn(MemoryStore.prototype, 'onReconnect');
    build({ mutationPolicy: 'Entity' });
    const reconnected = onReconnect.mock.calls[0]![0];
    onReconnect.mockRestore();
    const query = post({ query: '{ todos { id } }' });
    expect((await roundTrip(query)).status).toBe('MISS');
    const unreachable = vi.spyOn(store, 'invalidate').mockRejectedValue(new Error("Stream isn't writeable"));
    const mutation = post({ query: 'mutation { updateTodo(id: "1", title: "x") { id } }' });
    expect((await roundTrip(mutation, { body: Buffer.from('{"data":{"updateTodo":{"id":"1"}}}') })).status).toBe('PASS');
    // The first try and three retries (after 100, 200 and 400 ms); the next would be 800 ms later.
    await vi.waitFor(() => expect(unreachable.mock.calls.length).toBe(4), { timeout: 2_000, interval: 10 });
    unreachable.mockRestore();
    reconnected();
    await vi.waitFor(() => expect(engine.invalidationsPending).toBe(false), { timeout: 200, interval: 5 });
    expect((await roundTrip(query)).status).toBe('MISS');
  });

  it('refuses with 413 a coded body that decodes to more than limits.maxRequestBodyBytes, as that body would be', async () => {
    const { head } = post({}, [['content-encoding', 'gzip']]);
    const bomb = gzipSync(Buffer.from(`{"query":"mutation { addTodo(title: \\"x\\") { id } }","padding":"${' '.repeat(2 * 1024 * 1024)}"}`));
    const decision = await decide(head, bomb);
    expect(decision.kind === 'respond' && [decision.response.status, decision.status]).toEqual([413, 'ERROR']);
  });

  it('runs one flush of the store at a time, and one more behind it for every unseen operation answered meanwhile', async () => {
    let release: () => void = () => {};
    const flush = vi.spyOn(store, 'invalidateAll').mockImplementation(() => new Promise<number>((resolve) => (release = () => resolve(0))));
    const unseen = () => roundTrip(post({ documentId: 'rename' }), { body: Buffer.from('{"data":{"updateTodo":{"id":"1"}}}') });
    const settled: number[] = [];
    const answered = [unseen(), unseen(), unseen(), unseen()].map((answer, index) => answer.then((done) => (settled.push(index), done)));
    await vi.waitFor(() => expect(flush).toHaveBeenCalledTimes(1));
    release();
    // Each answer waits for a flush that started after it arrived: one for the first, the rest for the second.
    await vi.waitFor(() => expect([flush.mock.calls.length, settled.length]).toEqual([2, 1]));
    release();
    expect((await Promise.all(answered)).map((answer) => answer.status)).toEqual(['PASS', 'PASS', 'PASS', 'PASS']);
    expect(flush).toHaveBeenCalledTimes(2);
  });

  it('invalidates when the answer it reads never comes: a mutation by its root fields, an unseen operation by a flush', async () => {
    build({ mutationPolicy: 'Entity' });
    const invalidate = vi.spyOn(store, 'invalidate');
    const flush = vi.spyOn(store, 'invalidateAll');
    for (const request of [post({ query: 'mutation { updateTodo(id: "1", title: "x") { id } }' }), post({ documentId: 'rename' })]) {
      const exchange = engine.begin(request.head);
      await engine.requestBody(exchange, request.body);
      const head = await engine.responseHead(exchange, 200, [[':status', '200'], ...JSON_HEADERS], false);
      expect(head.wantsBody).toBe(true);
      // Envoy ends the stream before the body (a reset, a body over its buffer): stream.ts says so.
      exchange.endWithoutResponseBody();
      exchange.endWithoutResponseBody();
    }
    await vi.waitFor(() => expect([invalidate.mock.calls, flush.mock.calls.length]).toEqual([[[['t:Todo']]], 1]));
  });

  // The new user's run: a mutation refused in validation emptied entries; the review: a gateway's 504
  // without data may come while the origin runs the mutation on, so that one still invalidates.
  it('invalidates nothing for a request error without data, but the root fields\' types when it came with a 5xx', async () => {
    build({ mutationPolicy: 'Entity' });
    const invalidate = vi.spyOn(store, 'invalidate');
    const mutation = post({ query: 'mutation { updateTodo(id: "1", title: "x") { id } }' });
    const refused = Buffer.from('{"errors":[{"message":"Cannot query field \\"nope\\""}]}');
    for (const status of [200, 400, 504]) await roundTrip(mutation, { status, body: refused });
    await roundTrip(post([{ query: 'mutation { updateTodo(id: "2", title: "y") { id } }' }]), { status: 502, body: Buffer.from(`[${refused}]`) });
    // The review: a gateway's own body has neither data nor errors.
    await roundTrip(mutation, { status: 504, body: Buffer.from('{"message":"upstream request timeout"}') });
    expect(invalidate.mock.calls).toEqual([[['t:Todo']], [['t:Todo']], [['t:Todo']]]);
  });

  // The CPU audit, and the review of its first fix (a PASS let such a mutation empty the store, and
  // skipped the depth and alias limits): refused as any query over the depth limit, never forwarded.
  it('refuses a document nested deeper than twice maxDepth with QUERY_TOO_DEEP, POST or GET, query or mutation', async () => {
    const flush = vi.spyOn(store, 'invalidateAll');
    const nested = (operation: string) => `${operation} { ${'... { '.repeat(60)}__typename${' }'.repeat(60)} }`;
    for (const operation of ['query', 'mutation']) {
      const refused = await decide(post({ query: nested(operation) }).head, post({ query: nested(operation) }).body);
      expect(refused.kind === 'respond' && [refused.response.status, refused.status]).toEqual([400, 'ERROR']);
      const path = `/graphql?query=${encodeURIComponent(nested(operation))}`;
      const overGet = await decideHead({ method: 'GET', path, headers: [[':method', 'GET'], [':path', path]], hasBody: false });
      expect(overGet.kind === 'respond' && overGet.response.status).toBe(400);
    }
    expect(flush).not.toHaveBeenCalled();
  });

  // The reviews: flushing the store for each 5xx to an operation it cannot see would wipe, through an
  // origin outage, the entries stale-if-error serves; any client's junk request would do it.
  it('takes an operation it cannot see answered 4xx or 5xx, alone or in a batch, as not run', async () => {
    const flush = vi.spyOn(store, 'invalidateAll');
    const refused = Buffer.from('{"errors":[{"message":"upstream timed out"}]}');
    for (const status of [400, 503, 504]) {
      await roundTrip(post({ documentId: 'rename' }), { status, body: refused });
      await roundTrip(post([{ documentId: 'rename' }]), { status, body: Buffer.from(`[${refused}]`) });
    }
    expect(flush).not.toHaveBeenCalled();
  });

  it('does not retry an invalidation the store applied but a replica did not confirm', async () => {
    build({ mutationPolicy: 'Entity' });
    const unconfirmed = vi.spyOn(store, 'invalidate').mockRejectedValueOnce(new UnconfirmedInvalidation('a replica did not answer'));
    const mutation = post({ query: 'mutation { updateTodo(id: "1", title: "x") { id } }' });
    expect((await roundTrip(mutation, { body: Buffer.from('{"data":{"updateTodo":{"id":"1"}}}') })).status).toBe('PASS');
    expect([unconfirmed.mock.calls.length, engine.invalidationsPending]).toEqual([1, false]);
  });

  // The review of the no-response invalidation: past Envoy's message timeout (an event loop held
  // for a second) Envoy forwards the mutation as it came and ends the stream while it is still
  // being decided; what it owes is set after the stream's end, and must run then.
  it("invalidates a mutation's root fields' types when the stream ended before its decision was made", async () => {
    const invalidate = vi.spyOn(store, 'invalidate');
    const request = post({ query: 'mutation { addTodo(title: "x") { id } }' });
    const exchange = engine.begin(request.head);
    exchange.endWithoutResponsePhase();
    expect((await engine.requestBody(exchange, request.body)).kind).toBe('forward');
    await vi.waitFor(() => expect(invalidate).toHaveBeenCalledWith(['t:Todo']));
  });

  it('owes only the types of the root fields the schema has when a stream ended without an answer', async () => {
    // Such a field names every type queries hold: any client could empty the store by sending one
    // and going away (the work-per-request audit's `mutation { zzz }`).
    const invalidate = vi.spyOn(store, 'invalidate');
    const flush = vi.spyOn(store, 'invalidateAll');
    for (const body of [{ query: 'mutation { zzz }' }, [{ query: 'mutation { zzz }' }], 'query=mutation%20%7B%20zzz%20%7D']) {
      const request = typeof body === 'string' ? post({}) : post(body);
      const head = typeof body === 'string' ? { ...request.head, headers: [...request.head.headers.filter(([name]) => name !== 'content-type'), ['content-type', 'application/x-www-form-urlencoded']] as Array<[string, string]> } : request.head;
      const exchange = engine.begin(head);
      expect((await engine.requestBody(exchange, typeof body === 'string' ? Buffer.from(body) : request.body)).kind).toBe('forward');
      exchange.endWithoutResponsePhase();
    }
    // The fields it has beside one it lacks still owe their types.
    for (const query of ['mutation { addTodo(title: "x") { id } }', 'mutation { addTodo(title: "x") { id } zzz }']) {
      const known = post({ query });
      const exchange = engine.begin(known.head);
      await engine.requestBody(exchange, known.body);
      exchange.endWithoutResponsePhase();
    }
    await vi.waitFor(() => expect(invalidate.mock.calls).toEqual([[['t:Todo']], [['t:Todo']]]));
    expect(flush).not.toHaveBeenCalled();
  });

  it('forwards a mutation to read its answer, or passes it untouched under mutationPolicy None', async () => {
    const request = post({ query: 'mutation { addTodo(title: "x") { id } }' }, [['accept-encoding', 'gzip']]);
    const decision = await decide(request.head, request.body);
    expect(decision.kind === 'forward' && [decision.plan.kind, decision.requestHeaders]).toEqual([
      'mutation',
      { set: [], remove: ['accept-encoding'] },
    ]);
    build({ mutationPolicy: 'None' });
    const untouched = await decide(request.head, request.body);
    expect(untouched).toEqual({ kind: 'forward', requestHeaders: { set: [], remove: [] }, plan: { kind: 'pass', reason: 'mutation' } });
  });

  it('passes request bodies it cannot interpret', async () => {
    const head = post({}).head;
    for (const [raw, reason] of [
      ['[{"query":"{ todos { id } }"}]', 'batch'],
      ['{"query":1}', 'uninterpretable-body'],
      ['{"query":"{ todos { id } }","variables":"x"}', 'uninterpretable-body'],
      ['{"query":"{ todos { id } }","operationName":7}', 'uninterpretable-body'],
    ] as const) {
      const decision = await decide(head, Buffer.from(raw));
      expect(decision.kind === 'forward' && decision.plan, raw).toEqual({ kind: 'pass', reason });
    }
    // Not JSON to svc-cache, but Hot Chocolate reads trailing commas and comments: it may run.
    for (const raw of ['{oops', '{"query":"{ todos { id } }",}']) {
      const decision = await decide(head, Buffer.from(raw));
      expect(decision.kind === 'forward' && decision.plan, raw).toEqual({ kind: 'pass', reason: 'uninterpretable-body', unseen: { maxResponseBodyBytes: 10_000_000 } });
    }
    const textPlain = await decide(
      { ...head, headers: [['content-type', 'text/plain']] },
      Buffer.from('{"query":"{ todos { id } }"}'),
    );
    expect(textPlain.kind === 'forward' && textPlain.plan).toEqual({ kind: 'pass', reason: 'uninterpretable-body' });
    const notUtf8 = await decide(head, Buffer.concat([Buffer.from('{"query":"{ todos { id } }","variables":{"a":"'), Buffer.from([0xff]), Buffer.from('"}}')]));
    expect(notUtf8.kind === 'forward' && notUtf8.plan).toEqual({ kind: 'pass', reason: 'invalid-utf8' });
  });

  it('invalidates the root fields\' types of every mutation a body it cannot interpret may run, each shared fragment read once', async () => {
    const head = { ...post({}).head, headers: [['content-type', 'text/plain']] as Array<[string, string]> };
    // 2,000 mutations spreading one fragment of 2,000 fields (84 KB): walked once per mutation, as
    // before, this was hours of work; read once, it is the text's size.
    const count = 2_000;
    const operations = Array.from({ length: count }, (_, index) => `mutation m${index}{...F}`).join(' ');
    const query = `${operations} mutation u { updateUser(id: "1", name: "x") { id } } fragment F on Mutation { ${'updateTodo(id:1){title} '.repeat(count)} }`;
    const decision = await decide(head, Buffer.from(JSON.stringify({ query })));
    expect(decision.kind === 'forward' && decision.plan).toEqual({ kind: 'pass', reason: 'uninterpretable-body', unread: { policy: 'Entity', tags: ['t:Todo', 't:User'], ofKnownFields: ['t:Todo', 't:User'] } });
    // The operation named is the only one that may run; one over the limits is refused as a readable one is.
    const named = await decide(head, Buffer.from(JSON.stringify({ query, operationName: 'u' })));
    expect(named.kind === 'forward' && named.plan).toEqual({ kind: 'pass', reason: 'uninterpretable-body', unread: { policy: 'Entity', tags: ['t:User'], ofKnownFields: ['t:User'] } });
    const deep = `mutation a { ...F } mutation b { ...G } fragment F on Mutation { updateTodo(id: 1) { title } } fragment G on Mutation { updateUser(id: "1", name: "x") ${'{ todos { author '.repeat(15)}{ id }${' } }'.repeat(15)} }`;
    // An anonymous mutation beside other operations is none an origin could pick.
    const anonymous = await decide(head, Buffer.from(JSON.stringify({ query: 'query q { todos { id } } mutation { updateUser(id: "1", name: "x") { id } }' })));
    expect(anonymous.kind === 'forward' && anonymous.plan).toEqual({ kind: 'pass', reason: 'uninterpretable-body' });
    const refused = await decide(head, Buffer.from(JSON.stringify({ query: deep })));
    expect(refused.kind === 'respond' && [refused.response.status, JSON.parse(refused.response.body.toString()).errors[0].extensions.code]).toEqual([400, 'QUERY_TOO_DEEP']);
  });

  it('answers AMBIGUOUS_REQUEST itself, in the negotiated media type, and never forwards', async () => {
    const request = post({ query: '{ todos { id } }' }, [['accept', 'application/graphql-response+json']]);
    const decision = await decide({ ...request.head, path: '/graphql?query=%7B%20users%20%7B%20id%20%7D%20%7D' }, request.body);
    expect(decision.kind === 'respond' && [decision.status, decision.response.status, decision.response.headers]).toEqual([
      'ERROR',
      400,
      [['content-type', 'application/graphql-response+json; charset=utf-8']],
    ]);
  });

  it('passes other paths and upgrades at the request headers, unread', async () => {
    const { head } = post({ query: '{ todos { id } }' });
    expect(await decideHead({ ...head, path: '/echo?msg=x' })).toMatchObject({ kind: 'forward', plan: { kind: 'pass', reason: 'not-an-endpoint' } });
    // A POST to a variant of the endpoint path is read for mutations only (README, Invalidation after mutations).
    expect(await decideHead({ ...head, path: '/graphql/' })).toEqual({ kind: 'need-body' });
    expect(await decideHead({ ...head, path: '/graphql/', method: 'GET', hasBody: false })).toMatchObject({ plan: { kind: 'pass', reason: 'not-an-endpoint' } });
    // Too large to read, and the origin may still run it: one svc-cache cannot see, declared or not.
    expect(await decideHead({ ...head, path: '/graphql/', headers: [...head.headers, ['content-length', String(2 * 1024 * 1024)]] })).toMatchObject({
      plan: { kind: 'pass', reason: 'not-an-endpoint', unseen: { maxResponseBodyBytes: 10_000_000 } },
    });
    expect(await decide({ ...head, path: '/graphql/' }, Buffer.alloc(2 * 1024 * 1024, ' '))).toMatchObject({
      plan: { kind: 'pass', reason: 'not-an-endpoint', unseen: { maxResponseBodyBytes: 10_000_000 } },
    });
    expect(await decideHead({ ...head, headers: [...head.headers, ['upgrade', 'websocket']] })).toMatchObject({
      kind: 'forward',
      plan: { kind: 'pass', reason: 'upgrade-request' },
    });
    build({ endpoints: ['/t/acme/graphql'] });
    expect(await decideHead({ ...head, path: '/graphql' })).toMatchObject({ plan: { reason: 'not-an-endpoint' } });
    expect(await decideHead({ ...head, path: '/t/acme/graphql?x=1' })).toEqual({ kind: 'need-body' });
  });

  it('reads a POST below an endpoint path as one to a variant of it, whatever its content type', async () => {
    // A handler mounted on /graphql as a prefix (Express's app.use) runs /graphql/x, padded or ambiguous bodies too.
    const below = (body: string, headers: Array<[string, string]> = [['content-type', 'application/json; charset=utf-8']]) => ({
      head: { method: 'POST' as const, path: '/graphql/x', headers: [[':method', 'POST'], [':path', '/graphql/x'], ...headers] as Array<[string, string]>, hasBody: true },
      body: Buffer.from(body),
    });
    const update = 'mutation { updateTodo(id: \\"1\\", title: \\"x\\") { id } }';
    const mutation = below(`{"query":"${update}"}`);
    expect(await decideHead(mutation.head)).toEqual({ kind: 'need-body' });
    expect(await decide(mutation.head, mutation.body)).toMatchObject({ plan: { kind: 'pass', reason: 'not-an-endpoint', unread: { tags: ['t:Todo'] } } });
    // Ambiguous, or over the limits: refused as on the endpoint, never forwarded unread.
    const ambiguous = below(`{"query":"{ todos { id } }","query":"${update}"}`);
    const aliases = below(`{"query":"mutation { ${Array.from({ length: 60 }, (_, index) => `a${index}: updateTodo(id: \\"1\\", title: \\"x\\") { id }`).join(' ')} }"}`);
    for (const request of [ambiguous, aliases]) expect(await decide(request.head, request.body)).toMatchObject({ kind: 'respond', response: { status: 400 } });
    // An upload (graphql-upload mounted before the handler), a form, a bare query: read as well.
    const upload = below(
      ['--b', 'Content-Disposition: form-data; name="operations"', '', `{"query":"${update}"}`, '--b--', ''].join('\r\n'),
      [['content-type', 'multipart/form-data; boundary=b']],
    );
    const form = below(`query=${encodeURIComponent(update.replaceAll('\\', ''))}`, [['content-type', 'application/x-www-form-urlencoded']]);
    const bare = below(update.replaceAll('\\', ''), [['content-type', 'application/graphql']]);
    for (const request of [upload, form, bare]) {
      expect(await decideHead(request.head)).toEqual({ kind: 'need-body' });
      expect(await decide(request.head, request.body)).toMatchObject({ plan: { kind: 'pass', reason: 'not-an-endpoint', unread: { tags: ['t:Todo'] } } });
    }
  });

  // Express matches the raw path (/graphql/..), Yoga any URL ending with its endpoint (/x/graphql).
  it.each(['/graphql/..', '/x/graphql', '/echo?/graphql'])('reads a JSON POST to %s, which an origin may route to its GraphQL handler', async (path) => {
    const head = { method: 'POST' as const, path, headers: [[':method', 'POST'], [':path', path], ['content-type', 'application/json']] as Array<[string, string]>, hasBody: true };
    expect(await decideHead(head)).toEqual({ kind: 'need-body' });
    const body = Buffer.from(JSON.stringify({ query: 'mutation { updateTodo(id: "1", title: "x") { id } }' }));
    expect(await decide(head, body)).toMatchObject({ plan: { kind: 'pass', reason: 'not-an-endpoint', unread: { tags: ['t:Todo'] } } });
  });

  it.each([
    ['a URL ending with the endpoint', '/login?next=/graphql', ['/graphql']],
    ['any path, under an endpoint at /', '/login', ['/']],
  ] as const)('reads a POST to %s, which other routes share, for the mutations it finds only', async (_name, path, endpoints) => {
    build({ endpoints: [...endpoints] });
    const post = (body: string, contentType: string, length?: number) => ({
      head: { method: 'POST' as const, path, headers: [[':method', 'POST'], [':path', path], ['content-type', contentType], ...(length === undefined ? [] : [['content-length', String(length)]])] as Array<[string, string]>, hasBody: true },
      body: Buffer.from(body),
    });
    const passed = { kind: 'forward', requestHeaders: { set: [], remove: [] }, plan: { kind: 'pass', reason: 'not-an-endpoint' } };
    // A login form, repeated fields, a JSON body naming no query: another route's, neither refused nor emptying the store.
    for (const request of [post('user=a&password=b', 'application/x-www-form-urlencoded'), post('a=1&a=2', 'application/x-www-form-urlencoded'), post('{"name":"x"}', 'application/json')]) {
      expect(await decide(request.head, request.body)).toEqual(passed);
    }
    expect(await decideHead(post('', 'image/png', 50 * 1024 * 1024).head)).toEqual(passed);
    const mutation = post(JSON.stringify({ query: 'mutation { updateTodo(id: "1", title: "x") { id } }' }), 'application/json');
    expect(await decide(mutation.head, mutation.body)).toMatchObject({ plan: { kind: 'pass', reason: 'not-an-endpoint', unread: { tags: ['t:Todo'] } } });
  });

  it.each(['/graphql/', '/graphql/x'])('reads the URL of a request without a body to %s: a POST invalidates, a GET mutation gets 405, other GETs pass', async (path) => {
    const head = (method: 'GET' | 'POST', query: string) => {
      const target = `${path}?${query}`;
      return { method, path: target, headers: [[':method', method], [':path', target]] as Array<[string, string]>, hasBody: false };
    };
    const mutation = `query=${encodeURIComponent('mutation { updateTodo(id: "1", title: "x") { id } }')}`;
    expect(await decideHead(head('POST', mutation))).toEqual({
      kind: 'forward',
      requestHeaders: { set: [], remove: [] },
      plan: { kind: 'pass', reason: 'not-an-endpoint', unread: { policy: 'Entity', tags: ['t:Todo'], ofKnownFields: ['t:Todo'] } },
    });
    const refused = await decideHead(head('GET', mutation));
    expect(refused.kind === 'respond' && [refused.status, refused.response.status, refused.response.headers, JSON.parse(refused.response.body.toString())]).toEqual([
      'ERROR',
      405,
      [['content-type', 'application/json; charset=utf-8'], ['allow', 'POST']],
      { errors: [{ message: 'Mutations cannot be sent with GET; use POST', extensions: { code: 'METHOD_NOT_ALLOWED' } }] },
    ]);
    // Other GET routes may live there: a query, or a URL an endpoint would refuse, goes on unread.
    const passed = { kind: 'forward', requestHeaders: { set: [], remove: [] }, plan: { kind: 'pass', reason: 'not-an-endpoint' } };
    for (const other of [`query=${encodeURIComponent('{ todos { id } }')}`, 'query=cats&query=dogs', `query=${'x'.repeat(200_000)}`]) {
      expect(await decideHead(head('GET', other))).toEqual(passed);
    }
  });

  it('answers a HIT in the GraphQL JSON type the client prefers, whatever type stored it', async () => {
    const withAccept = (accept: string) => post({ query: '{ todos { id } }' }, [['accept', accept]]);
    expect((await roundTrip(withAccept('application/json'))).status).toBe('MISS');
    const contentTypeOf = async (accept: string) => {
      const decision = await decide(withAccept(accept).head, withAccept(accept).body);
      return decision.kind === 'respond' ? Object.fromEntries(decision.response.headers)['content-type'] : decision.kind === 'forward' && decision.plan;
    };
    expect(await contentTypeOf('application/json')).toBe('application/json; charset=utf-8');
    expect(await contentTypeOf('application/graphql-response+json')).toBe('application/graphql-response+json; charset=utf-8');
    expect(await contentTypeOf('application/graphql-response+json, application/json, text/event-stream, multipart/mixed')).toBe(
      'application/graphql-response+json; charset=utf-8',
    );
    expect(await contentTypeOf('*/*')).toBe('application/json; charset=utf-8');
    expect(await contentTypeOf('application/json;q=0.5, application/graphql-response+json')).toBe('application/graphql-response+json; charset=utf-8');
    // A client that accepts no JSON type at all streams: decided before the lookup.
    expect(await contentTypeOf('text/event-stream, application/json;q=0')).toEqual({ kind: 'pass', reason: 'streaming-request' });
    expect(await contentTypeOf('application/json')).toBe('application/json; charset=utf-8');
  });

  it("serves an origin's answer that varies on Accept only to clients that name no streaming type", async () => {
    const withAccept = (accept: string) => post({ query: '{ todos { id } }' }, [['accept', accept]]);
    const stored = await roundTrip(withAccept('application/json'), { headers: [...JSON_HEADERS, ['vary', 'Accept']] });
    expect(stored.status).toBe('MISS');
    const outcomeFor = async (accept: string) => {
      const decision = await decide(withAccept(accept).head, withAccept(accept).body);
      return decision.kind === 'respond' ? 'HIT' : decision.kind === 'forward' && decision.plan;
    };
    // That origin may stream to a client that asks for a stream by name (urql, Apollo with @defer).
    expect(await outcomeFor('application/graphql-response+json, application/json, text/event-stream, multipart/mixed')).toEqual({ kind: 'pass', reason: 'not-acceptable' });
    expect(await outcomeFor('multipart/mixed;deferSpec=20220824, application/json')).toEqual({ kind: 'pass', reason: 'not-acceptable' });
    expect(await outcomeFor('*/*')).toBe('HIT');
    expect(await outcomeFor('application/graphql-response+json')).toBe('HIT');
    expect(await outcomeFor('text/event-stream;q=0, application/json')).toBe('HIT');
  });

  it("sends the origin every body member it does not change with the client's exact text", async () => {
    const raw = '{"variables": {"n": 1.0, "big": 9007199254740993}, "query": "{ todos { title } }", "extensions": {"x": 1}, "z": "\\u0061"}';
    const decision = await decide(post({}).head, Buffer.from(raw));
    expect(decision.kind === 'forward' && decision.requestBody?.toString()).toBe(
      '{"extensions":{"x": 1},"query":"{\\n  todos {\\n    title\\n    _svc_id: id\\n  }\\n}","variables":{"n": 1.0, "big": 9007199254740993},"z":"\\u0061"}',
    );
  });

  it('passes a query no rule matches, and one whose matched rule has maxAge 0', async () => {
    build({ rules: [{ types: { Query: ['products'] }, maxAge: 60 }, { types: ['User'], maxAge: 0 }] });
    const todos = await decide(post({ query: '{ todos { id } }' }).head, post({ query: '{ todos { id } }' }).body);
    expect(todos.kind === 'forward' && todos.plan).toEqual({ kind: 'pass', reason: 'no-rule' });
    const users = post({ query: '{ products { sku } users { id } }' });
    const decision = await decide(users.head, users.body);
    expect(decision.kind === 'forward' && decision.plan).toEqual({ kind: 'pass', reason: 'max-age-zero' });
  });

  it('matches rules through interfaces, unions and fragments', async () => {
    build({ rules: [{ types: ['Product'], maxAge: 30 }] });
    for (const query of [
      '{ search(text: "a") { ... on Todo { id } } }',
      '{ products { ...P } } fragment P on Product { sku }',
    ]) {
      const request = post({ query });
      const decision = await decide(request.head, request.body);
      expect(decision.kind === 'forward' && decision.plan.kind, query).toBe('store');
    }
    const plain = post({ query: '{ todos { id } }' });
    const decision = await decide(plain.head, plain.body);
    expect(decision.kind === 'forward' && decision.plan.kind).toBe('pass');
  });

  it('takes the smallest maxAge of the matched rules', async () => {
    build({ rules: [{ types: ['Query'], maxAge: 900, swr: 100 }, { types: { Todo: ['title'] }, maxAge: 10, swr: 300 }] });
    const request = post({ query: '{ todos { title } }' });
    const decision = await decide(request.head, request.body);
    expect(decision.kind === 'forward' && decision.plan.kind === 'store' && [decision.plan.policy.maxAge, decision.plan.policy.swr]).toEqual([10, 100]);
  });

  describe('origin response', () => {
    const storePlan = async (): Promise<Exchange> => {
      const request = post({ query: '{ todos { id } }' });
      const exchange = engine.begin(request.head);
      const decision = await engine.requestBody(exchange, request.body);
      if (decision.kind !== 'forward' || exchange.plan?.kind !== 'store') throw new Error('expected a store plan');
      return exchange;
    };

    it.each([
      ['a non-200 status', 500, JSON_HEADERS],
      ['a non-JSON content type', 200, [['content-type', 'text/html']]],
      ['cache-control no-store', 200, [...JSON_HEADERS, ['cache-control', 'no-store']]],
      ['cache-control private', 200, [...JSON_HEADERS, ['cache-control', 'private, max-age=60']]],
      ['cache-control no-cache', 200, [...JSON_HEADERS, ['cache-control', 'no-cache']]],
      ['cdn-cache-control no-store beside cache-control public', 200, [...JSON_HEADERS, ['cache-control', 'public, max-age=60'], ['cdn-cache-control', 'no-store']]],
      ['surrogate-control no-store', 200, [...JSON_HEADERS, ['surrogate-control', 'no-store']]],
      ['set-cookie', 200, [...JSON_HEADERS, ['set-cookie', 'a=b']]],
      ['a content-encoding', 200, [...JSON_HEADERS, ['content-encoding', 'gzip']]],
      ['vary on a header outside the key', 200, [...JSON_HEADERS, ['vary', 'Accept, X-Tenant']]],
      ['a content-length over the limit', 200, [...JSON_HEADERS, ['content-length', String(20 * 1000 * 1000)]]],
    ] as const)('is not stored with %s, and the body is skipped', async (_name, status, headers) => {
      const exchange = await storePlan();
      const decision = await engine.responseHead(exchange, status, headers as Array<[string, string]>, false);
      expect(decision.wantsBody).toBe(false);
      expect(decision.headers).toEqual({ set: [['svc-cache', 'PASS']], remove: [] });
      expect(exchange.plan?.kind).toBe('pass');
    });

    it.each([
      ['errors', '{"errors":[{"message":"boom"}],"data":{"todos":null}}'],
      ['no data', '{"extensions":{}}'],
      ['a body that is not JSON', 'oops'],
    ])('is not stored with %s', async (_name, body) => {
      const exchange = await storePlan();
      expect((await engine.responseHead(exchange, 200, JSON_HEADERS, false)).wantsBody).toBe(true);
      const decision = await engine.responseBody(exchange, Buffer.from(body));
      expect({ ...decision, status: exchange.summary().outcome }).toEqual({ headers: { set: [['svc-cache', 'PASS']], remove: [] }, status: 'PASS' });
    });

    it('lets a shorter origin max-age shorten the entry, unless ignoreOriginCacheControl', async () => {
      const request = post({ query: '{ todos { id } }' });
      await roundTrip(request, { headers: [...JSON_HEADERS, ['cache-control', 'public, max-age=5']] });
      now += 6_000;
      expect((await decide(request.head, request.body)).kind).toBe('forward');

      build({ cache: { ignoreOriginCacheControl: true } });
      await roundTrip(request, { headers: [...JSON_HEADERS, ['cache-control', 'public, max-age=5']] });
      now += 6_000;
      expect((await decide(request.head, request.body)).kind).toBe('respond');
    });

    // The response audit: headers `connection` names, and an origin's copies of svc-cache's own
    // headers, were replayed on every HIT; the origin's `date` was not, so a HIT of an answer an
    // upstream cache had held looked new to the caches after svc-cache.
    it('replays safe origin headers on a HIT, its date included, and never per-user, hop-by-hop or svc-cache\'s own', async () => {
      const request = post({ query: '{ todos { id } }' });
      await roundTrip(request, {
        headers: [
          ...JSON_HEADERS,
          ['cache-control', 'public, max-age=60'],
          ['x-origin', 'kept'],
          ['connection', 'keep-alive, X-Hop'],
          ['x-hop', 'conn-1'],
          ['x-envoy-upstream-service-time', '4'],
          ['svc-cache-stale', 'error'],
          ['svc-debug-pass-reason', 'origin-status'],
          ['date', 'Tue, 01 Jan 2030 00:00:00 GMT'],
          ['content-length', String(ORIGIN_BODY.length)],
        ],
      });
      const hit = await decide(request.head, request.body);
      expect(hit.kind === 'respond' && hit.response.headers).toEqual([
        ['content-type', 'application/json; charset=utf-8'],
        ['cache-control', 'public, max-age=60'],
        ['x-origin', 'kept'],
        ['date', 'Tue, 01 Jan 2030 00:00:00 GMT'],
        ['svc-cache', 'HIT'],
        ['age', '0'],
      ]);
    });
  });

  // The review: an origin's svc-cache-stale or svc-debug-* reached the client of a MISS or PASS.
  it("removes the origin's copies of svc-cache's own headers from a MISS and a PASS, and sets its own", async () => {
    const origin: Array<[string, string]> = [[':status', '200'], ...JSON_HEADERS, ['svc-cache', 'HIT'], ['svc-cache-stale', 'error'], ['svc-debug-pass-reason', 'no-rule']];
    const miss = engine.begin(post({ query: '{ todos { id } }' }).head);
    await engine.requestBody(miss, post({ query: '{ todos { id } }' }).body);
    await engine.responseHead(miss, 200, origin, false);
    const missBody = await engine.responseBody(miss, ORIGIN_BODY);
    expect([miss.summary().outcome, missBody.headers.remove, missBody.headers.set.find(([name]) => name === 'svc-cache')]).toEqual([
      'MISS',
      ['svc-cache', 'svc-cache-stale', 'svc-debug-pass-reason'],
      ['svc-cache', 'MISS'],
    ]);
    build({ rules: [{ types: ['User'], maxAge: 60 }] });
    const pass = engine.begin(post({ query: '{ todos { id } }' }).head);
    await engine.requestBody(pass, post({ query: '{ todos { id } }' }).body);
    const passHead = await engine.responseHead(pass, 200, origin, false);
    expect([pass.summary().outcome, passHead.headers.remove]).toEqual(['PASS', ['svc-cache', 'svc-cache-stale', 'svc-debug-pass-reason']]);
  });

  // The review: nothing held that a stored entry's age, and so its HIT's `age` and lifetime, count the origin's Date.
  it("counts the age the origin's Date shows in a HIT's age and in how long the entry stays fresh", async () => {
    const request = post({ query: '{ todos { id } }' });
    const twentySecondsAgo = new Date(now - 20_000).toUTCString();
    expect((await roundTrip(request, { headers: [...JSON_HEADERS, ['cache-control', 'public, max-age=60'], ['date', twentySecondsAgo]] })).status).toBe('MISS');
    now += 30_000;
    const hit = await decide(request.head, request.body);
    // 19: a Date drops its second's fraction, so only the whole seconds the answer is certainly older count.
    expect(hit.kind === 'respond' && hit.response.headers.filter(([name]) => name === 'age' || name === 'date')).toEqual([
      ['date', twentySecondsAgo],
      ['age', '49'],
    ]);
    now += 11_001;
    expect((await decide(request.head, request.body)).kind).toBe('forward');
  });

  describe('fields svc-cache added, in answers it does not store (README, Invalidation after mutations)', () => {
    const added = Buffer.from('{"data":{"todos":[{"title":"Buy milk","_svc_id":"1"}]}}');
    const clientBody = '{"data":{"todos":[{"title":"Buy milk"}]}}';

    /** The response phases for a request whose query svc-cache rewrote. */
    async function answered(query: string, headers: Array<[string, string]>, body: Buffer) {
      const request = post({ query });
      const exchange = engine.begin(request.head);
      const forwarded = await engine.requestBody(exchange, request.body);
      expect(forwarded.kind === 'forward' && forwarded.requestBody?.toString()).toContain('_svc_id: id');
      const head = await engine.responseHead(exchange, 200, [[':status', '200'], ...headers], false);
      if (!head.wantsBody) return { wantsBody: false };
      const decision = await engine.responseBody(exchange, body);
      return { wantsBody: true, body: decision.body?.toString(), remove: decision.headers.remove };
    }

    it.each([
      ['text/plain', [['content-type', 'text/plain']]],
      ['no content type', []],
      ['application/problem+json', [['content-type', 'application/problem+json']]],
    ] as Array<[string, Array<[string, string]>]>)('cuts them from a query answer in %s', async (_name, headers) => {
      expect(await answered('{ todos { title } }', headers, added)).toEqual({ wantsBody: true, body: clientBody, remove: [] });
    });

    it.each([
      ['gzip', gzipSync(added)],
      ['x-gzip', gzipSync(added)],
      ['deflate', deflateSync(added)],
      ['br', brotliCompressSync(added)],
    ] as Array<[string, Buffer]>)('cuts them from an answer the origin compressed with %s, which then goes as identity', async (coding, body) => {
      const headers: Array<[string, string]> = [...JSON_HEADERS, ['content-encoding', coding]];
      expect(await answered('{ todos { title } }', headers, body)).toEqual({ wantsBody: true, body: clientBody, remove: ['content-encoding'] });
    });

    it("sends an answer it decoded and cut without the origin's digests of its bytes, its strong ETag weakened", async () => {
      const request = post({ query: '{ todos { title } }' });
      const exchange = engine.begin(request.head);
      await engine.requestBody(exchange, request.body);
      const validators: Array<[string, string]> = [['etag', '"v1"'], ['content-digest', 'sha-256=:abc=:'], ['repr-digest', 'sha-256=:abc=:']];
      await engine.responseHead(exchange, 200, [[':status', '200'], ...JSON_HEADERS, ['content-encoding', 'gzip'], ...validators], false);
      const decision = await engine.responseBody(exchange, gzipSync(added));
      expect([decision.body?.toString(), decision.headers.set.find(([name]) => name === 'etag'), [...decision.headers.remove].sort()]).toEqual([
        clientBody,
        ['etag', 'W/"v1"'],
        ['content-digest', 'content-encoding', 'repr-digest'],
      ]);
    });

    it('cuts them from a mutation answer it cannot read, which invalidates by type', async () => {
      const body = Buffer.from('{"data":{"updateTodo":{"title":"x","_svc_id":"1"}}}');
      const answer = await answered('mutation { updateTodo(id: "1", title: "x") { title } }', [['content-type', 'text/plain']], body);
      expect(answer).toEqual({ wantsBody: true, body: '{"data":{"updateTodo":{"title":"x"}}}', remove: [] });
    });

    it.each([
      ['declares more than limits.maxResponseBodyBytes', [...JSON_HEADERS, ['content-length', String(10_000_001)]]],
      ['streams', [['content-type', 'text/event-stream']]],
      ['has a coding it cannot undo', [...JSON_HEADERS, ['content-encoding', 'zstd']]],
    ] as Array<[string, Array<[string, string]>]>)('leaves an answer that %s to pass untouched', async (_name, headers) => {
      expect(await answered('{ todos { title } }', headers, added)).toEqual({ wantsBody: false });
      expect(await answered('mutation { updateTodo(id: "1", title: "x") { title } }', headers, added)).toEqual({ wantsBody: false });
    });

    it("sets its own headers with the body's answer only, counted against Envoy's 100 there", async () => {
      const request = post({ query: '{ todos { title } }' });
      const exchange = engine.begin(request.head);
      await engine.requestBody(exchange, request.body);
      // 99 headers with :status and no content-length: the stripped body's content-length makes 100.
      const headers: Array<[string, string]> = [[':status', '200'], ['content-type', 'text/plain'], ...Array.from({ length: 97 }, (_, i): [string, string] => [`x-h${i}`, 'v'])];
      const head = await engine.responseHead(exchange, 200, headers, false);
      expect([head.wantsBody, head.headers]).toEqual([true, { set: [], remove: [] }]);
      const body = await engine.responseBody(exchange, added);
      expect([body.body?.toString(), body.headers]).toEqual([clientBody, { set: [], remove: [] }]);
    });

    it('passes a compressed answer as it came when it does not decode, or holds none of them', async () => {
      const headers: Array<[string, string]> = [...JSON_HEADERS, ['content-encoding', 'gzip']];
      expect(await answered('{ todos { title } }', headers, Buffer.from('not gzip'))).toEqual({ wantsBody: true, body: undefined, remove: [] });
      const untouched = gzipSync('{"errors":[{"message":"no"}]}');
      expect(await answered('{ todos { title } }', headers, untouched)).toEqual({ wantsBody: true, body: undefined, remove: [] });
    });
  });

  describe('scopes', () => {
    beforeEach(() => {
      build({
        scopes: { AUTHENTICATED: 'header:authorization', SESSION: 'cookie:session' },
        rules: [
          { types: ['Query'], maxAge: 60 },
          { types: { Query: ['me'] }, maxAge: 30, scope: 'AUTHENTICATED' },
          { types: { Query: ['users'] }, maxAge: 30, scope: 'SESSION' },
        ],
      });
    });

    const me = (headers: Array<[string, string]>) => post({ query: '{ me { id } }' }, headers);

    it('gives each authorization value its own bucket and serves each only its own entry', async () => {
      const alice = me([['authorization', 'Bearer alice']]);
      const bob = me([['authorization', 'Bearer bob']]);
      expect((await roundTrip(alice, { body: Buffer.from('{"data":{"me":{"id":"u1"}}}') })).status).toBe('MISS');
      expect((await roundTrip(bob, { body: Buffer.from('{"data":{"me":{"id":"u2"}}}') })).status).toBe('MISS');
      const aliceHit = await decide(alice.head, alice.body);
      const bobHit = await decide(bob.head, bob.body);
      expect(aliceHit.kind === 'respond' && aliceHit.response.body.toString()).toBe('{"data":{"me":{"id":"u1"}}}');
      expect(bobHit.kind === 'respond' && bobHit.response.body.toString()).toBe('{"data":{"me":{"id":"u2"}}}');
      expect(aliceHit.kind === 'respond' && Object.fromEntries(aliceHit.response.headers)).toMatchObject({
        'cache-control': 'private, no-cache',
        vary: 'authorization',
      });
    });

    it('tells absent, empty and repeated key values apart', async () => {
      const keyOf = async (headers: Array<[string, string]>) => {
        const request = me(headers);
        const decision = await decide(request.head, request.body);
        if (decision.kind !== 'forward' || decision.plan.kind !== 'store') throw new Error('expected a store plan');
        return decision.plan.key;
      };
      const absent = await keyOf([]);
      const empty = await keyOf([['authorization', '']]);
      const once = await keyOf([['authorization', 'a']]);
      const twice = await keyOf([['authorization', 'a'], ['authorization', 'a']]);
      expect(new Set([absent, empty, once, twice]).size).toBe(4);
      expect(await keyOf([])).toBe(absent);
    });

    it('keys a cookie scope on that cookie only, whatever other cookies come along', async () => {
      const keyOf = async (cookie: string) => {
        const request = post({ query: '{ users { id } }' }, [['cookie', cookie]]);
        const decision = await decide(request.head, request.body);
        if (decision.kind !== 'forward' || decision.plan.kind !== 'store') throw new Error('expected a store plan');
        return decision.plan.key;
      };
      const plain = await keyOf('session=s1');
      expect(await keyOf('theme=dark; session=s1; lang=en')).toBe(plain);
      expect(await keyOf('session=s2; theme=dark')).not.toBe(plain);
      expect(await keyOf('session=s1; consent=necessary,analytics')).toBe(plain);
      // Another case is another cookie to svc-cache, but ASP.NET reads it as this one; parsers read a
      // line browsers would not send as different pairs, wherever the oddity stands (a raw JSON value
      // stops Python's SimpleCookie, ASP.NET Core reads on after a quote).
      for (const cookie of ['Session=s1', 'consent={"a":1}; session=s1', 'session=s1; consent={"a":1}', 'a=x"session=s1', 'session=s1 ; theme=dark']) {
        const ambiguous = post({ query: '{ users { id } }' }, [['cookie', cookie]]);
        const decision = await decide(ambiguous.head, ambiguous.body);
        expect(decision.kind === 'forward' && decision.plan).toMatchObject({ kind: 'pass', reason: 'ambiguous-scope-value' });
      }
    });

    it('never puts a raw scope value into the cache key', async () => {
      const request = me([['authorization', 'Bearer super-secret-token']]);
      const decision = await decide(request.head, request.body);
      if (decision.kind !== 'forward' || decision.plan.kind !== 'store') throw new Error('expected a store plan');
      expect(decision.plan.key).not.toContain('super-secret-token');
      expect(decision.plan.bucket).not.toContain('super-secret-token');
    });

    it('does not serve a credentialed request from PUBLIC unless the operator opts in', async () => {
      const todos = post({ query: '{ todos { id } }' }, [['authorization', 'Bearer alice']]);
      const decision = await decide(todos.head, todos.body);
      expect(decision.kind === 'forward' && decision.plan).toEqual({
        kind: 'pass',
        reason: 'credentials-on-public',
      });
      build({ cache: { publicForCredentialedRequests: true } });
      const optedIn = await decide(todos.head, todos.body);
      expect(optedIn.kind === 'forward' && optedIn.plan.kind).toBe('store');
    });
  });

  it('before the schema loads, answers 503 to a token-bearing purge and passes everything else', async () => {
    current = config({ purge: { tokens: ['purge-token-0123456789'] } });
    const withoutSchema = new DecisionEngine({
      state: () => ({ config: current, schema: undefined }),
      store,
      persistedQueries: new MemoryPersistedQueryRegistry({ maxBytes: () => 1024 * 1024 }),
      maxRewrittenPathBytes: MAX_REWRITTEN_PATH_BYTES,
      scopeKeySecret: Buffer.from('k'),
      logger: silentLogger(),
    });
    const token: Array<[string, string]> = [['svc-purge-token', 'purge-token-0123456789']];
    const decideWithoutSchema = (query: string) => {
      const request = post({ query }, token);
      return decide(request.head, request.body, withoutSchema);
    };
    const purge = await decideWithoutSchema('mutation { _purgeAll purgeTodo(id: "1") }');
    expect(purge.kind === 'respond' && [purge.response.status, JSON.parse(purge.response.body.toString())]).toEqual([
      503,
      { errors: [{ message: 'The purge API is not available until the origin schema is loaded', extensions: { code: 'PURGE_UNAVAILABLE' } }] },
    ]);
    const strip = { set: [], remove: ['svc-purge-token'] };
    expect(await decideWithoutSchema('{ todos { id } }')).toEqual({ kind: 'forward', requestHeaders: strip, plan: { kind: 'pass', reason: 'schema-not-loaded' } });
    expect(await decideWithoutSchema('mutation { addTodo(title: "x") { id } }')).toEqual({ kind: 'forward', requestHeaders: strip, plan: { kind: 'pass', reason: 'mutation' } });
  });

  it('does not grow a GET past what Envoy allows in request headers: passes it untouched', async () => {
    const query = `{ search(text: "${'x'.repeat(16 * 1024)}") { ... on Todo { title } } }`;
    const decision = await decideHead({
      method: 'GET',
      path: `/graphql?query=${encodeURIComponent(query)}`,
      headers: [],
      hasBody: false,
    });
    expect(decision).toEqual({
      kind: 'forward',
      requestHeaders: { set: [], remove: [] },
      plan: { kind: 'pass', reason: 'rewritten-path-too-long' },
    });
  });

  it('after a fault of its own, passes the request on without the purge token', async () => {
    const request = post({ query: '{ todos { id } }' }, [['svc-purge-token', 'secret']]);
    let calls = 0;
    const faulty = new DecisionEngine({
      state: () => {
        calls += 1;
        if (calls > 1) throw new Error('state unavailable');
        return { config: current, schema };
      },
      store,
      persistedQueries: new MemoryPersistedQueryRegistry({ maxBytes: () => 1024 * 1024 }),
      maxRewrittenPathBytes: MAX_REWRITTEN_PATH_BYTES,
      scopeKeySecret: Buffer.from('k'),
      logger: silentLogger(),
    });
    expect(await decide(request.head, request.body, faulty)).toEqual({
      kind: 'forward',
      requestHeaders: { set: [], remove: ['svc-purge-token'] },
      plan: { kind: 'pass', reason: 'engine-error' },
    });
  });

  describe('a chain of 20,000 fragment spreads (README, Bad input)', () => {
    /** `{ todos { ...F0 } }` and `fragment Fi on Todo { ...Fi+1 }` down to one that selects `leaf`: about 640 KB. */
    const spreadChain = (leaf: string, operation = '{ todos { ...F0 } }'): string =>
      [operation, ...Array.from({ length: 20_000 }, (_, i) => `fragment F${i} on Todo { ...F${i + 1} }`), `fragment F20000 on Todo { ${leaf} }`].join(' ');
    const roomyLimits = { limits: { maxQueryBytes: 1024 * 1024, maxRequestBodyBytes: 2 * 1024 * 1024 } };

    it('is cached like any other query: MISS, then HIT', async () => {
      build(roomyLimits);
      const request = post({ query: spreadChain('id') });
      expect((await roundTrip(request)).status).toBe('MISS');
      expect(await decide(request.head, request.body)).toMatchObject({ kind: 'respond', status: 'HIT', response: { body: ORIGIN_BODY } });
    });

    it('goes to the origin unchanged where a key field would be added: graphql-js cannot validate it, nor will the origin', async () => {
      build(roomyLimits);
      const request = post({ query: spreadChain('title') });
      const miss = await decide(request.head, request.body);
      expect(miss.kind === 'forward' && [miss.plan.kind, miss.requestBody]).toEqual(['store', undefined]);
    });

    it('is cut to the operation a named request runs, from a document of two', async () => {
      build(roomyLimits);
      const query = `query Other { todos { done } } ${spreadChain('id', 'query Chain { todos { ...F0 } }')}`;
      const request = post({ query, operationName: 'Chain' });
      expect((await roundTrip(request)).status).toBe('MISS');
      expect(await decide(request.head, request.body)).toMatchObject({ kind: 'respond', status: 'HIT', response: { body: ORIGIN_BODY } });
    });
  });

  it('logs at most 200 characters of why a request passed, which can quote the client', async () => {
    const { lines, sink } = capturedLines();
    const logged = new DecisionEngine(unitEngineDependencies(() => ({ config: current, schema }), store, () => now, { logger: pino({ level: 'debug' }, sink) }));
    const operationName = `Op${'x'.repeat(99_000)}`;
    const request = post({ query: '{ todos { id } }', operationName });
    const decision = await decide(request.head, request.body, logged);
    expect(decision.kind === 'forward' && decision.plan).toEqual({ kind: 'pass', reason: 'unknown-operation' });
    const detail = `no operation named "${operationName}"`;
    expect(lines.filter((line) => line.msg === 'request passed')).toMatchObject([
      { passReason: 'unknown-operation', detail: `${detail.slice(0, 200)}…[+${detail.length - 200}]` },
    ]);
  });

  it('passes a request carrying a configured bypass header', async () => {
    build({ cache: { bypassCacheHeaders: ['X-Bypass-Cache'] } });
    const request = post({ query: '{ todos { id } }' }, [['x-bypass-cache', '1']]);
    const decision = await decide(request.head, request.body);
    expect(decision.kind === 'forward' && decision.plan).toEqual({ kind: 'pass', reason: 'bypass-header' });
  });

  it('passes to the origin while the store fails', async () => {
    class UnreachableStore extends MemoryStore {
      override lookup(): never {
        throw new Error('redis down');
      }
    }
    const { lines, sink } = capturedLines();
    const failing = new DecisionEngine({
      state: () => ({ config: current, schema }),
      store: new UnreachableStore({ maxBytes: 1024 }),
      persistedQueries: new MemoryPersistedQueryRegistry({ maxBytes: () => 1024 * 1024 }),
      maxRewrittenPathBytes: MAX_REWRITTEN_PATH_BYTES,
      scopeKeySecret: Buffer.from('k'),
      logger: pino({ level: 'info' }, sink),
      now: () => now,
    });
    const request = post({ query: '{ todos { id } }' });
    for (const after of [0, 1_000, 9_000, 1_000]) {
      now += after;
      const decision = await decide(request.head, request.body, failing);
      expect(decision.kind === 'forward' && decision.plan).toEqual({ kind: 'pass', reason: 'store-unavailable' });
    }
    // Logged once, then once 10 s later with how many it stood for (README, Faults).
    expect(lines.map(({ msg, err, repeatedSinceLastLine }) => ({ msg, err, repeatedSinceLastLine }))).toEqual([
      { msg: 'cache store unavailable; passing to origin', err: 'redis down', repeatedSinceLastLine: undefined },
      { msg: 'cache store unavailable; passing to origin', err: 'redis down', repeatedSinceLastLine: 1 },
    ]);
  });

  it('logs what any client can make fail on every request, an unreachable APQ registry and purges without a token, as the store failures', async () => {
    const { lines, sink } = capturedLines();
    const down = (): Promise<never> => Promise.reject(new Error('redis down'));
    const failing = new DecisionEngine(
      unitEngineDependencies(() => ({ config: current, schema }), store, () => now, {
        logger: pino({ level: 'info' }, sink),
        persistedQueries: { get: down, register: down },
      }),
    );
    const hashOnly = post({ extensions: { persistedQuery: { version: 1, sha256Hash: 'a'.repeat(64) } } });
    const purge = post({ query: 'mutation { _purgeAll }' });
    for (let request = 0; request < 20; request += 1) {
      await decide(hashOnly.head, hashOnly.body, failing);
      await decide(purge.head, purge.body, failing);
    }
    expect(lines.map(({ msg }) => msg)).toEqual(['persisted query registry unavailable', 'purge refused']);
  });

  describe('stored documents sent by id, with the origin\'s manifest (persistedDocuments)', () => {
    const MANIFEST = new Map([
      ['todoTitles', 'query TodoTitles { todos { id title } }'],
      ['todo', 'query Todo($id: ID!) { todo(id: $id) { id title } }'],
      ['todoAuthors', 'query TodoAuthors { todos { id author { name } } }'],
      ['rename', 'mutation Rename { updateTodo(id: "1", title: "x") { id title } }'],
      [USERS_HASH, '{ users { id name } }'],
    ]);
    const withManifest = (input: Record<string, unknown> = {}) => {
      build({ persistedDocuments: { manifest: 'manifest.json' }, ...input });
      current = { ...current, persistedDocuments: { manifest: 'manifest.json', documents: MANIFEST } };
    };
    // Nothing to remove: these requests send no accept-encoding (fittedRequestChanges).
    const forwardedAsSent = { kind: 'forward', requestHeaders: { set: [], remove: [] } };
    /** A HIT's outcome, or how the request went on. */
    const outcome = (decided: Decided) => (decided.kind === 'respond' ? decided.status : decided.kind);
    const get = (path: string): RequestHead => ({ method: 'GET', path, headers: [[':method', 'GET'], [':path', path]], hasBody: false });

    it('caches a query named by documentId or doc_id, forwarding the id as sent', async () => {
      withManifest();
      for (const body of [{ documentId: 'todoTitles' }, { doc_id: 'todoTitles' }]) {
        const request = post(body);
        const miss = await roundTrip(request, { body: Buffer.from('{"data":{"todos":[{"id":"1","title":"a"}]}}') });
        expect([miss.decision, miss.status]).toEqual([forwardedAsSent, 'MISS']);
        expect(outcome(await decide(request.head, request.body))).toBe('HIT');
      }
    });

    it('never sends the text with key fields added: an answer holding an entity without its key is stored, and a change to any entity of its type drops it', async () => {
      withManifest({ mutationPolicy: 'Entity' });
      const byId = post({ documentId: 'todoAuthors' });
      const origin = { body: Buffer.from('{"data":{"todos":[{"id":"1","author":{"name":"a"}}]}}') };
      const miss = await roundTrip(byId, origin);
      expect([miss.decision, miss.status]).toEqual([forwardedAsSent, 'MISS']);
      expect(outcome(await decide(byId.head, byId.body))).toBe('HIT');
      // A product is no user: the entry stays.
      await roundTrip(post({ query: 'mutation { updateProduct(sku: "s", price: 1) { sku } }' }), { body: Buffer.from('{"data":{"updateProduct":{"sku":"s"}}}') });
      expect(outcome(await decide(byId.head, byId.body))).toBe('HIT');
      // Any user may be the author whose key the answer lacks.
      await roundTrip(post({ query: 'mutation { updateUser(id: "u9", name: "b") { id } }' }), { body: Buffer.from('{"data":{"updateUser":{"id":"u9"}}}') });
      expect((await roundTrip(byId, origin)).status).toBe('MISS');
      // The same document sent as text goes with the author's key added.
      const text = post({ query: 'query TodoAuthors { todos { id author { name } } }' });
      const decision = await decide(text.head, text.body);
      expect(decision.kind === 'forward' && JSON.parse(decision.requestBody!.toString()).query).toMatch(/author \{\s*name\s+_svc_id: id/);
    });

    it('keys a stored document by its variables, and answers a GET by documentId on its headers', async () => {
      withManifest();
      const variables = (id: string) => encodeURIComponent(JSON.stringify({ id }));
      const first = get(`/graphql?documentId=todo&variables=${variables('1')}`);
      const exchange = engine.begin(first);
      const decision = withExchange(await engine.requestHead(exchange), exchange);
      expect(decision.kind === 'forward' && [decision.requestHeaders, decision.plan.kind]).toEqual([{ set: [], remove: [] }, 'store']);
      await engine.responseHead(exchange, 200, [[':status', '200'], ...JSON_HEADERS], false);
      await engine.responseBody(exchange, Buffer.from('{"data":{"todo":{"id":"1","title":"a"}}}'));
      expect(outcome(await decideHead(first))).toBe('HIT');
      expect((await decideHead(get(`/graphql?documentId=todo&variables=${variables('2')}`))).kind).toBe('forward');
    });

    it("resolves an Apollo persisted-query hash the manifest holds, forwarding it untouched rather than refusing it as an unknown APQ hash", async () => {
      for (const enabled of [true, false]) {
        withManifest({ apq: { enabled } });
        const reference = { extensions: { persistedQuery: { version: 1, sha256Hash: USERS_HASH } } };
        const request = post(reference);
        const miss = await roundTrip(request, { body: Buffer.from('{"data":{"users":[{"id":"u1","name":"a"}]}}') });
        expect([miss.decision, miss.status]).toEqual([forwardedAsSent, 'MISS']);
        expect(outcome(await decide(request.head, request.body))).toBe('HIT');
      }
    });

    it("passes Hot Chocolate's id sent alone as a naming it does not read: the origin may have kept another text under it", async () => {
      withManifest();
      for (const path of ['/graphql', '/graphql?ID=todo']) {
        const byId = post(path === '/graphql' ? { id: 'todo', variables: { id: '1' } } : { variables: { id: '1' } });
        byId.head.path = path;
        expect(await decide(byId.head, byId.body), path).toMatchObject({ kind: 'forward', plan: { kind: 'pass', reason: 'unread-document-id', unseen: {} } });
      }
    });

    it("invalidates after a mutation named by id as after its text, without emptying the store", async () => {
      withManifest({ mutationPolicy: 'Entity' });
      const flush = vi.spyOn(store, 'invalidateAll');
      const query = post({ documentId: 'todo', variables: { id: '1' } });
      const origin = { body: Buffer.from('{"data":{"todo":{"id":"1","title":"a"}}}') };
      expect((await roundTrip(query, origin)).status).toBe('MISS');
      const mutation = await roundTrip(post({ documentId: 'rename' }), { body: Buffer.from('{"data":{"updateTodo":{"id":"1","title":"x"}}}') });
      expect([mutation.decision, mutation.status]).toEqual([forwardedAsSent, 'PASS']);
      expect((await roundTrip(query, origin)).status).toBe('MISS');
      expect(flush).not.toHaveBeenCalled();
    });

    it.each([
      ['an id the manifest lacks', { documentId: 'unknown' }, 'unknown-document-id'],
      // Not refused as an unknown APQ hash: the origin's newer manifest may hold it.
      ['a persisted-query hash the manifest lacks', { extensions: { persistedQuery: { version: 1, sha256Hash: 'a'.repeat(64) } } }, 'unknown-document-id'],
      ['two different ids', { documentId: 'todo', doc_id: 'todoTitles' }, 'unread-document-id'],
      ['an id under another name', { queryId: 'todo' }, 'unread-document-id'],
      ['no text and nothing else', { variables: { id: '1' } }, 'no-query'],
      ['a null or empty id, which names nothing', { documentId: null, doc_id: '' }, 'no-query'],
      // Not svc-cache's own APQ refusal: the origin may read a reference beside other members its own way.
      ['a persisted-query hash beside another member', { extensions: { persistedQuery: { version: 1, sha256Hash: 'a'.repeat(64) } }, tenant: 'x' }, 'unread-document-id'],
      // Hot Chocolate runs a document it knows by id rather than the text beside it.
      ['a query text beside a documentId', { query: '{ todos { id } }', documentId: 'todo' }, 'query-beside-document-id'],
      ['a mutation text beside a doc_id', { query: 'mutation { addTodo(title: "x") { id } }', doc_id: 'todo' }, 'query-beside-document-id'],
    ])('passes %s as an operation svc-cache cannot see', async (_name, body, reason) => {
      withManifest();
      const request = post(body);
      expect(await decide(request.head, request.body)).toEqual({
        kind: 'forward',
        requestHeaders: { set: [], remove: [] },
        plan: { kind: 'pass', reason, unseen: { maxResponseBodyBytes: 10_000_000 } },
      });
    });

    it("passes every id on to the origin under an empty manifest, as under one that lacks it", async () => {
      build({ persistedDocuments: { manifest: 'manifest.json' } });
      current = { ...current, persistedDocuments: { manifest: 'manifest.json', documents: new Map() } };
      for (const body of [{ documentId: 'todo' }, { extensions: { persistedQuery: { version: 1, sha256Hash: 'a'.repeat(64) } } }]) {
        const request = post(body);
        expect(await decide(request.head, request.body)).toMatchObject({ kind: 'forward', plan: { kind: 'pass', reason: 'unknown-document-id' } });
      }
    });

    describe("a text beside Hot Chocolate's id goes to the origin without it, which then runs the text", () => {
      const withoutId = (decision: Decided) => decision.kind === 'forward' && [decision.requestHeaders.set, decision.requestBody?.toString()];

      it('for a query svc-cache stores, keyed as before', async () => {
        build();
        const named = post({ id: 'TodoListQuery', query: '{ todos { id } }', variables: { n: 1.0 } });
        expect(withoutId(await decide(named.head, named.body))).toEqual([[], '{"query":"{ todos { id } }","variables":{"n":1}}']);
        expect((await roundTrip(named)).status).toBe('MISS');
        expect(outcome(await decide(named.head, named.body))).toBe('HIT');
        // The id stays in the key: another id's request is another entry.
        const other = post({ id: 'Other', query: '{ todos { id } }', variables: { n: 1.0 } });
        expect(outcome(await decide(other.head, other.body))).toBe('forward');
      });

      it('for a mutation, a pass, and an id of any value or in the URL', async () => {
        build({ mutationPolicy: 'Entity', rules: [{ types: { Query: ['todos'] }, maxAge: 60 }] });
        const mutation = post({ query: 'mutation { deleteTodo(id: "1") }', id: 'kept' });
        expect(withoutId(await decide(mutation.head, mutation.body))).toEqual([[], '{"query":"mutation { deleteTodo(id: \\"1\\") }"}']);
        const uncached = post({ query: '{ users { id } }', id: 7 });
        const passed = await decide(uncached.head, uncached.body);
        expect(passed.kind === 'forward' && passed.plan).toEqual({ kind: 'pass', reason: 'no-rule' });
        expect(withoutId(passed)).toEqual([[], '{"query":"{ users { id } }"}']);
        const viaUrl = post({ query: '{ todos { id } }' });
        viaUrl.head.path = '/graphql?ID=kept&tenant=a';
        // The body has no id: it goes as it came.
        expect(withoutId(await decide(viaUrl.head, viaUrl.body))).toEqual([[[':path', '/graphql?tenant=a']], undefined]);
        const byGet = await decideHead(get(`/graphql?query=${encodeURIComponent('{ todos { id } }')}&id=kept`));
        expect(byGet.kind === 'forward' && [byGet.plan.kind, byGet.requestHeaders.set]).toEqual(['store', [[':path', '/graphql?query=%7B%20todos%20%7B%20id%20%7D%20%7D']]]);
      });

      it('for the operations of a batch that carry one, the others as sent', async () => {
        build({ mutationPolicy: 'Entity' });
        const batch = post([{ query: '{ todos { id } }', id: 'A' }, { id: 'B' }, { query: 'mutation { deleteTodo(id: "1") }', id: 'C' }]);
        const decision = await decide(batch.head, batch.body);
        expect(decision.kind === 'forward' && [decision.plan.kind, decision.requestBody?.toString()]).toEqual([
          'batch',
          '[{"query":"{ todos { id } }"},{"id":"B"},{"query":"mutation { deleteTodo(id: \\"1\\") }"}]',
        ]);
        // An operation passed unseen beside a documentId keeps its members; the next one loses its id.
        const mixed = post([{ query: '{ todos { id } }', documentId: 'D', id: 'A' }, { query: '{ users { id } }', id: 'B' }]);
        const unseen = await decide(mixed.head, mixed.body);
        expect(unseen.kind === 'forward' && unseen.requestBody?.toString()).toBe('[{"query":"{ todos { id } }","documentId":"D","id":"A"},{"query":"{ users { id } }"}]');
        expect(unseen.kind === 'forward' && unseen.plan).toMatchObject({ kind: 'batch', unseen: [0], mutations: [undefined, undefined] });
        const queries = post([{ query: '{ todos { id } }', id: 'A' }, { query: '{ users { id } }' }]);
        const passed = await decide(queries.head, queries.body);
        expect(passed.kind === 'forward' && [passed.plan, passed.requestBody?.toString()]).toEqual([{ kind: 'pass', reason: 'batch' }, '[{"query":"{ todos { id } }"},{"query":"{ users { id } }"}]']);
      });

      it('but for a body svc-cache does not read, which keeps its id and so may run what svc-cache cannot see', async () => {
        build({ mutationPolicy: 'Entity' });
        const variant = post({ query: '{ todos { id } }', id: 'kept' });
        variant.head.path = '/graphql/';
        expect(await decide(variant.head, variant.body)).toEqual({
          kind: 'forward',
          requestHeaders: { set: [], remove: [] },
          plan: { kind: 'pass', reason: 'not-an-endpoint', unseen: { maxResponseBodyBytes: 10_000_000 } },
        });
      });

      it('but for ids the manifest holds for this very text, each of them', async () => {
        withManifest();
        const same = post({ query: MANIFEST.get('todoTitles'), id: 'todoTitles' });
        expect(withoutId(await decide(same.head, same.body))).toEqual([[], undefined]);
        expect((await roundTrip(same, { body: Buffer.from('{"data":{"todos":[{"id":"1","title":"a"}]}}') })).status).toBe('MISS');
        // Another text under a manifest id, or one id the manifest holds beside one it does not: left out.
        const other = post({ query: '{ todos { id } }', id: 'todo' });
        expect(withoutId(await decide(other.head, other.body))).toEqual([[], '{"query":"{ todos { id } }"}']);
        const mixed = post({ query: MANIFEST.get('todoTitles'), id: 'kept' });
        mixed.head.path = '/graphql?ID=todoTitles';
        expect(withoutId(await decide(mixed.head, mixed.body))).toEqual([[[':path', '/graphql']], JSON.stringify({ query: MANIFEST.get('todoTitles') })]);
        const byGet = await decideHead(get(`/graphql?query=${encodeURIComponent('{ todos { id } }')}&id=todo`));
        expect(byGet.kind === 'forward' && [byGet.plan.kind, byGet.requestHeaders.set]).toEqual(['store', [[':path', '/graphql?query=%7B%20todos%20%7B%20id%20%7D%20%7D']]]);
      });

      it('beside an APQ hash too, expanded or forwarded as the reference, alone or in a batch', async () => {
        const hash = createHash('sha256').update('{ todos { id } }').digest('hex');
        const reference = { extensions: { persistedQuery: { version: 1, sha256Hash: hash } } };
        for (const forwardPersistedQuery of [false, true]) {
          build({ apq: { forwardPersistedQuery } });
          // The text with its hash, answered with data, registers the hash.
          expect((await roundTrip(post({ query: '{ todos { id } }', ...reference }))).status).toBe('MISS');
          const alone = post({ ...reference, id: 'kept' });
          const decision = await decide(alone.head, alone.body);
          const body = decision.kind === 'forward' ? JSON.parse(decision.requestBody!.toString()) : undefined;
          expect(body, String(forwardPersistedQuery)).toEqual(forwardPersistedQuery ? reference : { query: '{ todos { id } }' });
        }
        const batch = post([{ ...reference, id: 'kept' }]);
        const decision = await decide(batch.head, batch.body);
        expect(decision.kind === 'forward' && decision.requestBody?.toString()).toBe(JSON.stringify([reference]));
      });

      it('and a path it only shortened is not refused as too long', async () => {
        build();
        const request = post({ query: '{ todos { id } }', id: 'kept' });
        request.head.path = `/graphql?pad=${'a'.repeat(20_000)}&id=kept`;
        const decision = await decide(request.head, request.body);
        expect(decision.kind === 'forward' && [decision.plan.kind, decision.requestHeaders.set]).toEqual(['store', [[':path', `/graphql?pad=${'a'.repeat(20_000)}`]]]);
      });
    });

    it.each([
      ['maxQueryBytes', { maxQueryBytes: 20 }],
      ['maxDepth', { maxDepth: 1 }],
    ])('passes a stored document over limits.%s as one svc-cache cannot see, since the origin runs it anyway', async (_name, limits) => {
      withManifest({ limits });
      const request = post({ documentId: 'todoAuthors' });
      expect(await decide(request.head, request.body)).toEqual({
        kind: 'forward',
        requestHeaders: { set: [], remove: [] },
        plan: { kind: 'pass', reason: 'stored-document-over-limits', unseen: { maxResponseBodyBytes: 10_000_000 } },
      });
    });

    it('refuses a GET mutation beside an id with 405, and passes a GET query beside one unstored', async () => {
      withManifest();
      const mutation = await decideHead(get(`/graphql?query=${encodeURIComponent('mutation { addTodo(title: "x") { id } }')}&documentId=todo`));
      expect(mutation.kind === 'respond' && [mutation.response.status, mutation.status]).toEqual([405, 'ERROR']);
      const query = await decideHead(get(`/graphql?query=${encodeURIComponent('{ todos { id } }')}&documentId=todo`));
      expect(query).toEqual({ kind: 'forward', requestHeaders: { set: [], remove: [] }, plan: { kind: 'pass', reason: 'query-beside-document-id' } });
    });

    it('refuses a GET naming a stored mutation with 405 also in a URL origins read otherwise, and passes such a query unstored', async () => {
      withManifest({});
      for (const extra of ['&variables=', '&variables=null', '&extensions=null', '&documentId=rename', '&variables=%7B%7D&variables=%7B%7D']) {
        const mutation = await decideHead(get(`/graphql?documentId=rename${extra}`));
        expect(mutation.kind === 'respond' && [extra, mutation.response.status]).toEqual([extra, 405]);
      }
      const query = await decideHead(get('/graphql?documentId=todoAuthors&variables='));
      expect(query).toEqual({ kind: 'forward', requestHeaders: { set: [], remove: [] }, plan: { kind: 'pass', reason: 'uninterpretable-body' } });
    });

    it('refuses a GET naming a stored mutation over the limits with 405, as within them, and passes such a query', async () => {
      withManifest({ limits: { maxQueryBytes: 20 } });
      const mutation = await decideHead(get('/graphql?documentId=rename'));
      expect(mutation.kind === 'respond' && [mutation.response.status, mutation.status]).toEqual([405, 'ERROR']);
      const query = await decideHead(get('/graphql?documentId=todoAuthors'));
      expect(query).toEqual({ kind: 'forward', requestHeaders: { set: [], remove: [] }, plan: { kind: 'pass', reason: 'stored-document-over-limits' } });
    });

    it('counts a batched query text beside an id as an operation svc-cache cannot see', async () => {
      withManifest({ mutationPolicy: 'Entity' });
      const request = post([{ query: '{ todos { id } }' }, { query: '{ todos { id } }', documentId: 'rename' }]);
      const decision = await decide(request.head, request.body);
      expect(decision.kind === 'forward' && decision.plan).toMatchObject({ kind: 'batch', unseen: [1], mutations: [undefined, undefined] });
    });

    it('reads a mutation named by id in a batch, so the batch no longer empties the store', async () => {
      withManifest({ mutationPolicy: 'Entity' });
      const request = post([{ documentId: 'todoTitles' }, { documentId: 'rename' }]);
      const decision = await decide(request.head, request.body);
      expect(decision.kind === 'forward' && decision.plan).toMatchObject({ kind: 'batch', unseen: [], mutations: [undefined, { kind: 'mutation' }] });
    });
  });
});

/** A sink for a pino logger that keeps each line it writes, parsed. */
function capturedLines(): { lines: Array<Record<string, unknown>>; sink: Writable } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { lines, sink };
}
