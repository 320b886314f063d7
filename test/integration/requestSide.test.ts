import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { silentLogger } from '../../src/observability/log.js';
import { startSidecar, type Sidecar } from '../../src/sidecar/sidecar.js';
import { startEchoOrigin, type EchoOrigin } from '../support/echoOrigin.js';
import { testConfig } from '../support/stack.js';

/**
 * Issue 12, the request side, through the gateway to the echo origin (whose answer names the path,
 * host and body it got): endpoints, host and path in the key; Accept parsed, not substring-matched;
 * unambiguous parameters and canonical variables; svc-cache's own answers in the negotiated media type;
 * introspection cached only when a rule names it.
 */

const PURGE_TOKEN = 'request-side-purge-token-0123456789';
const URQL_ACCEPT = 'application/graphql-response+json, application/json, text/event-stream, multipart/mixed';
const GR = 'application/graphql-response+json; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';

interface Sent {
  method?: 'GET' | 'POST';
  path?: string;
  host?: string;
  /** Header lines as sent, repeated names kept. */
  headers?: Array<[string, string]>;
  body?: Buffer | string;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

let origin: EchoOrigin;
let sidecar: Sidecar;
let gateway: Gateway;

beforeAll(async () => {
  origin = await startEchoOrigin();
  sidecar = await startSidecar({
    config: testConfig(origin.url, {
      endpoints: ['/graphql', '/t/acme/graphql', '/t/globex/graphql'],
      rules: [{ types: ['Query'], maxAge: 60 }],
      limits: { maxAliases: 1, maxRequestBodyBytes: 4096 },
      purge: { tokens: [PURGE_TOKEN] },
    }),
    grpcPort: 0,
    adminPort: 0,
    host: '127.0.0.1',
    logger: silentLogger(),
  });
  await sidecar.schemaReady;
  gateway = await startGateway({ processor: `127.0.0.1:${sidecar.grpcPort}`, origin: origin.url, port: 0 });
});

afterAll(async () => {
  await gateway.close();
  await sidecar.close(1000);
  await origin.close();
});

beforeEach(() => origin.reset());

/** One request with exactly these header lines (fetch would join repeats and refuse `host`). */
function send({ method = 'POST', path = '/graphql', host = 'api.example', headers = [], body }: Sent): Promise<Answer> {
  const payload = body === undefined ? undefined : Buffer.from(body);
  const lines = [['host', host], ...headers, ...(payload ? [['content-length', String(payload.length)]] : [])].flat();
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(`${gateway.url}${path}`, { method, headers: lines }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const joined: Record<string, string> = {};
        for (const [name, value] of Object.entries(response.headers)) if (value !== undefined) joined[name] = Array.isArray(value) ? value.join(', ') : value;
        resolve({ status: response.statusCode ?? 0, headers: joined, text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

const json: Array<[string, string]> = [['content-type', 'application/json']];
const post = (body: string, extra: Partial<Sent> = {}) => send({ headers: [...json, ['accept', 'application/json'], ...(extra.headers ?? [])], body, ...omitHeaders(extra) });
const omitHeaders = ({ headers: _headers, ...rest }: Partial<Sent>) => rest;
const status = (answer: Answer) => answer.headers['svc-cache'];
const ECHO = '{"query":"{ echo { id text } }"}';

describe('item 6: endpoints, host and path', () => {
  it('never shares an entry between two configured endpoints', async () => {
    const acme = [await post(ECHO, { path: '/t/acme/graphql' }), await post(ECHO, { path: '/t/acme/graphql' })];
    const globex = [await post(ECHO, { path: '/t/globex/graphql' }), await post(ECHO, { path: '/t/globex/graphql' })];
    expect([...acme, ...globex].map(status)).toEqual(['MISS', 'HIT', 'MISS', 'HIT']);
    expect(acme[0]!.text).toContain('/t/acme/graphql');
    expect(globex[1]!.text).toContain('/t/globex/graphql');
    expect(origin.requestCount).toBe(2);
  });

  it('passes a non-endpoint path untouched, so reflecting it cannot poison /graphql', async () => {
    const reflected = await post(ECHO, { path: '/echo?msg=poison' });
    expect([reflected.status, status(reflected)]).toEqual([200, 'PASS']);
    expect(reflected.text).toContain('poison');
    const graphql = await post(ECHO);
    expect(status(graphql)).toBe('MISS');
    expect(graphql.text).not.toContain('poison');
    expect(status(await post(ECHO, { path: '/graphql/' }))).toBe('PASS');
  });

  // An outside audit: an origin may echo the spelling of the host it got (Yoga's request.url).
  it('keys the host as sent: two hosts differ, and so do its case and a default port', async () => {
    const first = await post(ECHO, { host: 'one.example' });
    const other = await post(ECHO, { host: 'two.example' });
    const spelt = await post(ECHO, { host: 'ONE.example:80' });
    const again = await post(ECHO, { host: 'one.example' });
    expect([first, other, spelt, again].map(status)).toEqual(['MISS', 'MISS', 'MISS', 'HIT']);
    expect(JSON.parse(JSON.parse(spelt.text).data.echo.text).host).toBe('ONE.example:80');
    expect(again.text).toBe(first.text);
  });
});

describe("item 2: Accept parsed, urql's default cacheable", () => {
  it('caches a query sent with urql’s Accept and serves it to plain JSON clients', async () => {
    const host = 'urql.example';
    const urql = [await post(ECHO, { host, headers: [['accept', URQL_ACCEPT]] }), await post(ECHO, { host, headers: [['accept', URQL_ACCEPT]] })];
    expect(urql.map(status)).toEqual(['MISS', 'HIT']);
    expect(status(await post(ECHO, { host }))).toBe('HIT');
    expect(origin.requestCount).toBe(1);
  });

  it('reads a mutation sent with urql’s Accept (not a pass: its answer invalidates)', async () => {
    const host = 'mutation.example';
    expect(status(await post(ECHO, { host }))).toBe('MISS');
    expect(status(await post(ECHO, { host }))).toBe('HIT');
    await post('{"query":"mutation { bump { id text } }"}', { host, headers: [['accept', URQL_ACCEPT]] });
    expect(origin.version).toBe(1);
    expect(status(await post(ECHO, { host }))).toBe('MISS');
  });

  it('applies limits and the GET-mutation 405 to clients that accept only event streams', async () => {
    const aliases = await post('{"query":"{ a: echo { id } b: echo { id } }"}', { headers: [['accept', 'text/event-stream']] });
    expect([aliases.status, JSON.parse(aliases.text).errors[0].extensions.code]).toEqual([400, 'TOO_MANY_ALIASES']);
    const hashOnly = await post(`{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"${'b'.repeat(64)}"}}}`, { headers: [['accept', URQL_ACCEPT]] });
    expect(JSON.parse(hashOnly.text)).toMatchObject({ errors: [{ message: 'PersistedQueryNotFound' }] });
    const mutation = await send({ method: 'GET', path: `/graphql?query=${encodeURIComponent('mutation { bump { id } }')}`, headers: [['accept', 'text/event-stream']] });
    expect([mutation.status, mutation.headers['allow'], mutation.headers['content-type']]).toEqual([405, 'POST', JSON_TYPE]);
  });

  // An `upgrade` header never reaches ext_proc through this gateway (hop-by-hop): test/engine covers it.
  it('passes a document that streams with its own code', async () => {
    const deferred = await post('{"query":"{ echo { id ... @defer { text } } }"}', { headers: [['svc-debug', '1'], ['svc-purge-token', PURGE_TOKEN]] });
    expect([status(deferred), deferred.headers['svc-debug-pass-reason']]).toEqual(['PASS', 'streaming-document']);
  });
});

describe('items 7 and 10: parameters read as the origin runs them', () => {
  it('answers AMBIGUOUS_REQUEST for differing repeats and never forwards it', async () => {
    const get = await send({ method: 'GET', path: `/graphql?query=${encodeURIComponent('{ echo { id } }')}&query=${encodeURIComponent('{ viewer { id } }')}` });
    const url = await post(ECHO, { path: `/graphql?query=${encodeURIComponent('{ viewer { id } }')}` });
    const contentTypes = await send({ headers: [...json, ['content-type', 'text/plain']], body: ECHO });
    for (const answer of [get, url, contentTypes]) {
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text)).toMatchObject({ errors: [{ extensions: { code: 'AMBIGUOUS_REQUEST' } }] });
    }
    expect(origin.requestCount).toBe(0);
    const identical = await send({ method: 'GET', path: `/graphql?query=${encodeURIComponent('{ echo { id } }')}&query=${encodeURIComponent('{ echo { id } }')}` });
    expect(identical.status).toBe(200);
  });

  it('keys number spellings apart and member order and escapes together', async () => {
    const num = (n: string) => post(`{"query":"query Num($n: Float) { echo(n: $n) { id text } }","variables":{"n":${n}}}`);
    const answers = [await num('1'), await num('1.0'), await num('9007199254740993'), await num('9007199254740992')];
    expect(answers.map(status)).toEqual(['MISS', 'MISS', 'MISS', 'MISS']);
    const str = (body: string) => post(body);
    expect(status(await str('{"query":"query Str($s: String) { echo(s: $s) { id text } }","variables":{"s":"a"}}'))).toBe('MISS');
    expect(status(await str('{ "variables" : { "s" : "\\u0061" }, "query":"query Str($s: String) { echo(s: $s) { id text } }"}'))).toBe('HIT');
  });

  it("keys a custom scalar's object with its members in the order sent, which the origin's code sees", async () => {
    const json = (j: string) => post(`{"query":"query Json($j: JSON) { echo(j: $j) { id text } }","variables":{"j":${j}}}`);
    const first = await json('{"b":2,"a":1}');
    const other = await json('{"a":1,"b":2}');
    const again = await json('{ "b" : 2 , "a" : 1 }');
    expect([first, other, again].map(status)).toEqual(['MISS', 'MISS', 'HIT']);
    expect(JSON.parse(JSON.parse(other.text).data.echo.text).variables).toBe('{"j":{"a":1,"b":2}}');
    expect(again.text).toBe(first.text);
  });

  it('passes a body that is not UTF-8, uncached', async () => {
    const body = Buffer.concat([Buffer.from('{"query":"query Str($s: String) { echo(s: $s) { id text } }","variables":{"s":"'), Buffer.from([0xff]), Buffer.from('"}}')]);
    const answers = [await send({ headers: json, body }), await send({ headers: json, body })];
    expect(answers.map(status)).toEqual(['PASS', 'PASS']);
    expect(origin.requestCount).toBe(2);
  });
});

describe('item 12: own answers in the negotiated media type', () => {
  const cases: Array<[string | undefined, string]> = [
    ['application/graphql-response+json', GR],
    ['application/json', JSON_TYPE],
    [undefined, JSON_TYPE],
  ];

  it.each(cases)('Accept %s: 405, limit 400, 413, AMBIGUOUS_REQUEST, APQ errors and the purge 401 in %s', async (accept, contentType) => {
    const headers: Array<[string, string]> = accept === undefined ? [] : [['accept', accept]];
    const answers = [
      await send({ method: 'GET', path: `/graphql?query=${encodeURIComponent('mutation { bump { id } }')}`, headers }),
      await send({ headers: [...json, ...headers], body: '{"query":"{ a: echo { id } b: echo { id } }"}' }),
      await send({ headers: [...json, ...headers], body: `{"query":"{ echo { id } }","pad":"${'x'.repeat(5000)}"}` }),
      await send({ headers: [...json, ...headers], body: '{"query":"{ echo { text } }"}', path: '/graphql?query=x' }),
      await send({ headers: [...json, ...headers], body: `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"${'a'.repeat(64)}"}}}` }),
      await send({ headers: [...json, ...headers], body: '{"query":"{ echo { id } }","extensions":{"persistedQuery":{"version":1,"sha256Hash":"bad"}}}' }),
      await send({ headers: [...json, ...headers, ['svc-purge-token', 'wrong']], body: '{"query":"mutation { _purgeAll }"}' }),
    ];
    expect(answers.map((answer) => [answer.status, answer.headers['content-type']])).toEqual([
      [405, contentType],
      [400, contentType],
      [413, contentType],
      [400, contentType],
      [200, contentType],
      [400, contentType],
      [401, contentType],
    ]);
  });
});

describe('item 13: introspection', () => {
  it('is not cached under a [Query] rule; __typename alone is', async () => {
    const introspection = '{"query":"{ __schema { queryType { name } } }"}';
    expect([status(await post(introspection)), status(await post(introspection))]).toEqual(['PASS', 'PASS']);
    const typename = '{"query":"{ __typename echo { id } }"}';
    expect([status(await post(typename)), status(await post(typename))]).toEqual(['MISS', 'HIT']);
  });
});
