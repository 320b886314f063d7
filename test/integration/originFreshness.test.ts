import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RequestSummary } from '../../src/engine/engine.js';
import { postGraphQL, startDemoOrigin, type DemoOrigin, type GraphQLHttpResult } from '../support/origin.js';
import { startStack, type Stack, useStack } from '../support/stack.js';

/**
 * What RFC 9111 lets a shared cache store and for how long, the origin's `Vary`, and streamed
 * answers, end to end through the gateway (docs/graphql-caching.md, Cacheability).
 */

const TODO = '{ todo(id: "1") { id title } }';
const TODO_BODY = '{"data":{"todo":{"id":"1","title":"Buy milk"}}}';

function statuses(results: readonly GraphQLHttpResult<unknown>[]): Array<string | undefined> {
  return results.map((result) => result.headers['svc-cache']);
}

describe("the origin's freshness and Vary", () => {
  const summaries: RequestSummary[] = [];

  const stack = useStack(
    { scopes: { tenant: 'header:x-tenant' }, rules: [{ types: ['Query'], maxAge: 60 }, { types: { Query: ['me'] }, maxAge: 60, scope: 'tenant' }] },
    { onRequestCompleted: (summary) => summaries.push(summary) },
  );
  beforeEach(async () => {
    summaries.length = 0;
  });

  async function twice(query: string, headers: Record<string, string> = {}): Promise<GraphQLHttpResult<unknown>[]> {
    return [await postGraphQL(stack().url, { query }, headers), await postGraphQL(stack().url, { query }, headers)];
  }

  /** The pass reasons of the requests so far, once their streams have ended. */
  async function passReasons(count: number): Promise<Array<string | undefined>> {
    await expect.poll(() => summaries.length).toBeGreaterThanOrEqual(count);
    return summaries.map((summary) => summary.passReason);
  }

  it.each([
    ['Expires: 0', { expires: '0' }, 'origin-expired'],
    ['an Expires in the past', { expires: 'Thu, 01 Jan 2015 00:00:00 GMT' }, 'origin-expired'],
    ['Pragma: no-cache without Cache-Control', { pragma: 'no-cache' }, 'origin-pragma-no-cache'],
    ['an invalid max-age', { 'cache-control': 'max-age=soon' }, 'origin-max-age-invalid'],
    ['Vary: *', { vary: '*' }, 'origin-vary-star'],
    ['Vary on a request header outside the key', { vary: 'X-Region' }, 'origin-vary'],
    // Requests with different ones (a JSON POST and a JSON-typed GET, two spellings of one body) share a key.
    ['Vary: Content-Type', { vary: 'Content-Type' }, 'origin-vary'],
    ['Vary: Content-Length', { vary: 'Content-Length' }, 'origin-vary'],
  ])('passes an answer with %s, as the origin sent it', async (_name, headers, reason) => {
    stack().origin.setBehaviour({ headers });
    const results = await twice(TODO);
    expect(statuses(results)).toEqual(['PASS', 'PASS']);
    expect(results.map((result) => result.text)).toEqual([TODO_BODY, TODO_BODY]);
    expect(await passReasons(2)).toEqual([reason, reason]);
    expect(stack().origin.requestCount()).toBe(2);
  });

  it.each([
    ['s-maxage over max-age=0', { 'cache-control': 's-maxage=60, max-age=0' }],
    ['Expires an hour after Date', { date: new Date().toUTCString(), expires: new Date(Date.now() + 3_600_000).toUTCString() }],
    ['Pragma: no-cache beside a Cache-Control', { pragma: 'no-cache', 'cache-control': 'max-age=60' }],
    ['Vary: Accept, Accept-Encoding', { vary: 'Accept, Accept-Encoding' }],
  ])('stores an answer with %s', async (_name, headers) => {
    stack().origin.setBehaviour({ headers });
    const results = await twice(TODO);
    expect(statuses(results)).toEqual(['MISS', 'HIT']);
    expect(results.map((result) => result.text)).toEqual([TODO_BODY, TODO_BODY]);
    expect(stack().origin.requestCount()).toBe(1);
  });

  it("counts an upstream cache's Age into a HIT's age, as into its freshness", async () => {
    stack().origin.setBehaviour({ headers: { 'cache-control': 'public, max-age=60', age: '50' } });
    const results = await twice(TODO);
    expect(statuses(results)).toEqual(['MISS', 'HIT']);
    expect(results.map((result) => result.headers.age)).toEqual(['50', expect.stringMatching(/^5[01]$/)]);
    expect(results[1]!.headers['cache-control']).toBe('public, max-age=60');
  });

  it("never replays an origin's per-user or proxy authentication headers, nor Clear-Site-Data", async () => {
    const perUser = {
      'authentication-info': 'nextnonce="a1"',
      'proxy-authentication-info': 'nextnonce="p1"',
      'proxy-status': 'origin; error=none',
      'clear-site-data': '"cookies"',
      'x-kept': 'yes',
    };
    stack().origin.setBehaviour({ headers: perUser });
    const [miss, hit] = await twice(TODO);
    expect(statuses([miss!, hit!])).toEqual(['MISS', 'HIT']);
    for (const [name, value] of Object.entries(perUser)) expect(miss!.headers[name]).toBe(value);
    expect(Object.keys(perUser).filter((name) => hit!.headers[name] !== undefined)).toEqual(['x-kept']);
  });

  it('does not store an answer that sets a cookie, by Set-Cookie2 as by Set-Cookie', async () => {
    stack().origin.setBehaviour({ headers: { 'set-cookie2': 'old=1; Version=1' } });
    const [first, second] = await twice(TODO);
    expect(statuses([first!, second!])).toEqual(['PASS', 'PASS']);
    expect(second!.headers['set-cookie2']).toBe('old=1; Version=1');
  });

  it('stores an answer under no-transform as the origin sent it, never compressed', async () => {
    const query = `{ ${['a', 'b', 'c', 'd'].map((alias) => `${alias}: todos { id title done }`).join(' ')} }`;
    stack().origin.setBehaviour({ headers: { 'cache-control': 'public, max-age=60, no-transform' } });
    const gzipClient = { 'accept-encoding': 'gzip' };
    const [miss, hit] = [await postGraphQL(stack().url, { query }, gzipClient), await postGraphQL(stack().url, { query }, gzipClient)];
    expect(statuses([miss!, hit!])).toEqual(['MISS', 'HIT']);
    expect(miss!.text.length).toBeGreaterThan(256);
    expect([hit!.headers['content-encoding'], hit!.headers.vary, hit!.text]).toEqual([undefined, undefined, miss!.text]);
  });

  it("stores an answer that varies on a scope's header, which the key holds whole", async () => {
    stack().origin.setBehaviour({ headers: { vary: 'X-Tenant' } });
    const results = await twice('{ me { id } }', { 'x-tenant': 'acme' });
    expect(statuses(results)).toEqual(['MISS', 'HIT']);
  });

  it('streams an event-stream answer through, unread and unstored', async () => {
    const body = 'event: next\ndata: {"data":{"todo":{"id":"1"}}}\n\nevent: complete\ndata:\n\n';
    stack().origin.setBehaviour({ forcedResponse: { status: 200, headers: { 'content-type': 'text/event-stream' }, body } });
    const results = await twice(TODO);
    expect(statuses(results)).toEqual(['PASS', 'PASS']);
    expect(results.map((result) => [result.status, result.headers['content-type'], result.text])).toEqual([
      [200, 'text/event-stream', body],
      [200, 'text/event-stream', body],
    ]);
    expect(await passReasons(2)).toEqual(['origin-streaming', 'origin-streaming']);
  });
});

describe('an origin that signs users in with a sid cookie and answers Vary: Cookie (issue 12, item 5)', () => {
  let demo: DemoOrigin;
  let sidOrigin: Server;
  let stack: Stack;

  beforeAll(async () => {
    demo = await startDemoOrigin({ port: 0 });
    sidOrigin = await startSidOrigin(demo.port);
    const url = `http://127.0.0.1:${(sidOrigin.address() as AddressInfo).port}/graphql`;
    stack = await startStack(
      // The scope keys a `session` cookie the origin does not read: the whole cookie header is not in the key.
      { scopes: { session: 'cookie:session' }, rules: [{ types: { Query: ['me'] }, maxAge: 60, scope: 'session' }] },
      { origin: { ...demo, url } },
    );
  });
  afterAll(async () => {
    await stack.close();
    await new Promise((resolve) => sidOrigin.close(resolve));
    await demo.close();
  });

  it("never serves Alice's me to an anonymous client or to Bob", async () => {
    const me = (cookie?: string) => postGraphQL(stack.url, { query: '{ me { name } }' }, cookie ? { cookie } : {});
    const alice = await me('sid=alice');
    const anonymous = await me();
    const bob = await me('sid=bob');
    expect([alice, anonymous, bob].map((result) => [result.headers['svc-cache'], result.text])).toEqual([
      ['PASS', '{"data":{"me":{"name":"Alice"}}}'],
      ['PASS', '{"data":{"me":null}}'],
      ['PASS', '{"data":{"me":{"name":"Bob"}}}'],
    ]);
  });
});

/** In front of the demo origin: `cookie: sid=<token>` signs in as the demo's `Bearer <token>`, and every answer says `Vary: Cookie`. */
async function startSidOrigin(demoPort: number): Promise<Server> {
  const server = createServer((req, res) => {
    const sid = /(?:^|;\s*)sid=([^;]*)/.exec(req.headers.cookie ?? '')?.[1];
    const headers = { ...req.headers };
    delete headers.cookie;
    delete headers.authorization;
    if (sid !== undefined) headers.authorization = `Bearer ${sid}`;
    const upstream = httpRequest({ host: '127.0.0.1', port: demoPort, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, { ...answer.headers, vary: 'Cookie' });
      answer.pipe(res);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}
