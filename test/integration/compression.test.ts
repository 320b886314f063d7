import { request } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { readResponse, type RawAnswer } from '../support/rawHttp.js';
import { type ConfigInput, useStack } from '../support/stack.js';

/**
 * Stored bodies are compressed (README, Response headers stored and replayed): through the gateway,
 * a HIT answers a client that accepts the stored coding with the stored bytes, and any other client
 * with the origin's bytes, from one entry.
 */

const USERS = '{ users { id name email todos { id title done } } }';
const TODO = '{ todo(id: "1") { id title } }';
const TOKEN = 'compression-purge-token-0123456789';

/** A POST whose answer is read as bytes, never decoded: what the client gets on the wire. */
function post(url: string, query: string, headers: Record<string, string> = {}): Promise<RawAnswer> {
  const payload = Buffer.from(JSON.stringify({ query }));
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', ...headers } }, (response) => {
      readResponse(response).then(resolve, reject);
    });
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

/** The headers a test asserts exactly: framing, coding, vary and the cache status. */
function framing(answer: RawAnswer): Record<string, string | undefined> {
  const { headers } = answer;
  return {
    'content-type': headers['content-type'],
    'content-length': headers['content-length'],
    'content-encoding': headers['content-encoding'],
    vary: headers['vary'],
    'svc-cache': headers['svc-cache'],
  };
}

describe('compressed storage, gzip (the default)', () => {
  const stack = useStack({ purge: { tokens: [TOKEN] } });

  it('answers a client accepting gzip with the stored gzip bytes, and one accepting none with the origin bytes, from one entry', async () => {
    const miss = await post(stack().url, USERS, { 'accept-encoding': 'gzip, br' });
    const encoded = await post(stack().url, USERS, { 'accept-encoding': 'gzip, br' });
    const identity = await post(stack().url, USERS);
    const originBytes = miss.body;
    expect(originBytes.length).toBeGreaterThanOrEqual(256);
    expect(framing(miss)).toEqual({
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(originBytes.length),
      'content-encoding': undefined,
      vary: undefined,
      'svc-cache': 'MISS',
    });
    expect(framing(encoded)).toEqual({
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(encoded.body.length),
      'content-encoding': 'gzip',
      vary: 'accept-encoding',
      'svc-cache': 'HIT',
    });
    expect(encoded.body.length).toBeLessThan(originBytes.length);
    expect(gunzipSync(encoded.body).equals(originBytes)).toBe(true);
    expect(framing(identity)).toEqual({
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(originBytes.length),
      'content-encoding': undefined,
      vary: 'accept-encoding',
      'svc-cache': 'HIT',
    });
    expect(identity.body.equals(originBytes)).toBe(true);
    // One origin request, and the origin was asked for identity bytes: svc-cache reads what it stores.
    expect(stack().origin.requests.map((seen) => seen.headers['accept-encoding'])).toEqual([undefined]);
  });

  it('negotiates with q-values: gzip;q=0 gets identity, identity;q=0 without gzip goes to the origin', async () => {
    await post(stack().url, USERS);
    const refused = await post(stack().url, USERS, { 'accept-encoding': 'br, gzip;q=0' });
    expect([refused.headers['svc-cache'], refused.headers['content-encoding']]).toEqual(['HIT', undefined]);
    const nothing = await post(stack().url, USERS, { 'accept-encoding': 'br, identity;q=0', 'svc-debug': '1', 'svc-purge-token': TOKEN });
    expect([nothing.headers['svc-cache'], nothing.headers['svc-debug-pass-reason']]).toEqual(['PASS', 'not-acceptable']);
    const anything = await post(stack().url, USERS, { 'accept-encoding': '*' });
    expect([anything.headers['svc-cache'], anything.headers['content-encoding']]).toEqual(['HIT', 'gzip']);
  });

  it('keeps a body under cache.compression.minBytes identity: no coding, no vary', async () => {
    const miss = await post(stack().url, TODO);
    const hit = await post(stack().url, TODO, { 'accept-encoding': 'gzip' });
    expect(miss.body.length).toBeLessThan(256);
    expect(framing(hit)).toEqual({
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(miss.body.length),
      'content-encoding': undefined,
      vary: undefined,
      'svc-cache': 'HIT',
    });
    expect(hit.body.equals(miss.body)).toBe(true);
  });

  it("adds accept-encoding to the origin's vary, once", async () => {
    stack().origin.setBehaviour({ headers: { vary: 'Accept' } });
    await post(stack().url, USERS);
    expect((await post(stack().url, USERS, { 'accept-encoding': 'gzip' })).headers['vary']).toBe('Accept, accept-encoding');
    await stack().sidecar.store.invalidateAll();
    stack().origin.setBehaviour({ headers: { vary: 'Accept-Encoding' } });
    await post(stack().url, USERS);
    expect((await post(stack().url, USERS, { 'accept-encoding': 'gzip' })).headers['vary']).toBe('Accept-Encoding');
  });

  it("sends a body with the members svc-cache added cut out without the origin's digests, its strong ETag weakened: MISS, HIT and PASS", async () => {
    // `title` alone: svc-cache adds `id` for tagging, and the client gets other bytes than the origin sent.
    const QUERY = '{ todo(id: "1") { title } }';
    const validators = { etag: '"v1"', 'content-digest': 'sha-256=:abc=:', 'repr-digest': 'sha-256=:abc=:', digest: 'SHA-256=abc=', 'content-md5': 'abc==', 'x-app': 'kept' };
    stack().origin.setBehaviour({ headers: validators });
    const seen = (answer: RawAnswer) => [
      answer.headers['svc-cache'],
      ...['etag', 'content-digest', 'repr-digest', 'digest', 'content-md5', 'x-app'].map((name) => answer.headers[name]),
      answer.headers['content-encoding'] === undefined ? answer.body.toString() : gunzipSync(answer.body).toString(),
    ];
    const body = '{"data":{"todo":{"title":"Buy milk"}}}';
    const answers = [await post(stack().url, QUERY), await post(stack().url, QUERY), await post(stack().url, QUERY, { 'accept-encoding': 'gzip' })];
    stack().origin.setBehaviour({ headers: { ...validators, 'cache-control': 'no-store' } });
    answers.push(await post(stack().url, '{ todo(id: "2") { title } }'));
    expect(answers.map(seen)).toEqual([
      ['MISS', 'W/"v1"', undefined, undefined, undefined, undefined, 'kept', body],
      ['HIT', 'W/"v1"', undefined, undefined, undefined, undefined, 'kept', body],
      ['HIT', 'W/"v1"', undefined, undefined, undefined, undefined, 'kept', body],
      ['PASS', 'W/"v1"', undefined, undefined, undefined, undefined, 'kept', '{"data":{"todo":{"title":"Write the report"}}}'],
    ]);
  });

  it("passes an origin answer that comes encoded anyway, bytes and headers untouched, and stores nothing", async () => {
    const body = '{"data":{"users":[]}}';
    stack().origin.setBehaviour({
      forcedResponse: { status: 200, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body },
    });
    const answers = [
      await post(stack().url, USERS, { 'accept-encoding': 'gzip', 'svc-debug': '1', 'svc-purge-token': TOKEN }),
      await post(stack().url, USERS, { 'accept-encoding': 'gzip' }),
    ];
    expect(answers.map((answer) => [answer.headers['svc-cache'], answer.headers['content-encoding'], answer.body.toString()])).toEqual([
      ['PASS', 'gzip', body],
      ['PASS', 'gzip', body],
    ]);
    expect(answers[0]!.headers['svc-debug-pass-reason']).toBe('origin-encoded');
    expect(stack().origin.requestCount()).toBe(2);
  });
});

describe('compressed storage and stale-if-error', () => {
  const stack = useStack({ rules: [{ types: ['Query'], maxAge: 1, staleIfError: 5 }] }, { freshEachTest: false });

  it('answers a failing origin with the stale entry in the coding the client accepts, as a HIT', async () => {
    const miss = await post(stack().url, USERS);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    stack().origin.setBehaviour({ forcedResponse: { status: 500, headers: { 'content-type': 'text/plain' }, body: 'down' } });
    const encoded = await post(stack().url, USERS, { 'accept-encoding': 'gzip' });
    const identity = await post(stack().url, USERS);
    expect([encoded.headers['svc-cache-stale'], encoded.headers['content-encoding'], encoded.headers['vary'], encoded.headers['content-length']]).toEqual([
      'error',
      'gzip',
      'accept-encoding',
      String(encoded.body.length),
    ]);
    expect(gunzipSync(encoded.body).equals(miss.body)).toBe(true);
    expect([identity.headers['svc-cache-stale'], identity.headers['content-encoding'], identity.body.equals(miss.body)]).toEqual(['error', undefined, true]);
  });
});

describe('compressed storage, brotli', () => {
  const config: ConfigInput = { cache: { compression: { encoding: 'br', level: 5 } } };

  const stack = useStack(config, { freshEachTest: false });

  it('answers a client accepting br with the stored bytes and a gzip-only client with identity bytes', async () => {
    const miss = await post(stack().url, USERS, { 'accept-encoding': 'gzip' });
    const brotli = await post(stack().url, USERS, { 'accept-encoding': 'gzip, deflate, br' });
    const gzipOnly = await post(stack().url, USERS, { 'accept-encoding': 'gzip' });
    expect([brotli.headers['svc-cache'], brotli.headers['content-encoding'], brotli.headers['content-length']]).toEqual(['HIT', 'br', String(brotli.body.length)]);
    expect(brotliDecompressSync(brotli.body).equals(miss.body)).toBe(true);
    expect([gzipOnly.headers['svc-cache'], gzipOnly.headers['content-encoding'], gzipOnly.headers['vary']]).toEqual(['HIT', undefined, 'accept-encoding']);
    expect(gzipOnly.body.equals(miss.body)).toBe(true);
  });
});
