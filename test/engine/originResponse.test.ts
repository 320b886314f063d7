import { describe, expect, it } from 'vitest';
import { parse } from 'graphql';
import { documentHashOf, Exchange } from '../../src/engine/exchange.js';
import { isEncoded, isGraphQLJson, isStreaming, storeVerdict } from '../../src/engine/originResponse.js';
import { cachePolicyFor } from '../../src/engine/rules.js';
import { explanationHeaders } from '../../src/engine/responses.js';

/** Cacheability of an origin response by its headers, rule matching, and what an Exchange reports. */

const JSON_TYPE: [string, string] = ['content-type', 'application/json'];
const keyed = new Set(['accept', 'authorization']);

const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);
const RULES = { maxAge: 60, swr: 30, staleIfError: 600 };
const context = { keyedRequestHeaders: keyed, maxResponseBodyBytes: 1000, rules: RULES, ignoreOriginCacheControl: false, now: NOW };

/** A storable verdict: fresh `maxAge` seconds, then the rules' stale windows unless the origin bounds them. */
function lifetime(maxAge: number, swr = RULES.swr, staleIfError = RULES.staleIfError) {
  return { maxAge, swr, staleIfError };
}

describe('storeVerdict', () => {
  it.each([
    ['a 200 GraphQL JSON answer', 200, [JSON_TYPE], lifetime(60)],
    ['graphql-response+json', 200, [['content-type', 'application/graphql-response+json; charset=utf-8']], lifetime(60)],
    ['a non-200 status', 404, [JSON_TYPE], { reason: 'origin-status' }],
    ['text/html', 200, [['content-type', 'text/html']], { reason: 'origin-content-type' }],
    ['an event stream', 200, [['content-type', 'text/event-stream']], { reason: 'origin-streaming' }],
    ['multipart/mixed', 200, [['content-type', 'multipart/mixed; boundary="-"']], { reason: 'origin-streaming' }],
    ['no-store', 200, [JSON_TYPE, ['cache-control', 'max-age=5, No-Store']], { reason: 'origin-no-store' }],
    ['no-cache', 200, [JSON_TYPE, ['cache-control', 'no-cache']], { reason: 'origin-no-cache' }],
    ['Pragma: no-cache without Cache-Control', 200, [JSON_TYPE, ['pragma', 'no-cache']], { reason: 'origin-pragma-no-cache' }],
    ['Pragma: no-cache beside Cache-Control', 200, [JSON_TYPE, ['pragma', 'no-cache'], ['cache-control', 'max-age=5']], lifetime(5)],
    ['private', 200, [JSON_TYPE, ['cache-control', 'private']], { reason: 'origin-private' }],
    ['Expires: 0', 200, [JSON_TYPE, ['expires', '0']], { reason: 'origin-expired' }],
    ['Expires in the past', 200, [JSON_TYPE, ['expires', 'Mon, 23 Nov 2026 11:00:00 GMT']], { reason: 'origin-expired' }],
    ['Expires minus Date, less the age Date shows', 200, [JSON_TYPE, ['date', 'Mon, 23 Nov 2026 11:59:50 GMT'], ['expires', 'Mon, 23 Nov 2026 12:00:20 GMT']], lifetime(21)],
    ['a Date older than the rule', 200, [JSON_TYPE, ['date', 'Mon, 23 Nov 2026 11:58:00 GMT'], ['cache-control', 'max-age=600']], { reason: 'origin-expired' }],
    ['max-age over Expires', 200, [JSON_TYPE, ['cache-control', 'max-age=7'], ['expires', '0']], lifetime(7)],
    ['s-maxage over max-age, and never stale', 200, [JSON_TYPE, ['cache-control', 's-maxage=7, max-age=5']], lifetime(7, 0, 0)],
    ['a max-age over the rule', 200, [JSON_TYPE, ['cache-control', 'max-age=600']], lifetime(60)],
    ['max-age=0', 200, [JSON_TYPE, ['cache-control', 'max-age=0']], { reason: 'origin-max-age-zero' }],
    ['an invalid max-age', 200, [JSON_TYPE, ['cache-control', 'max-age=soon']], { reason: 'origin-max-age-invalid' }],
    ['set-cookie', 200, [JSON_TYPE, ['set-cookie', 'a=b']], { reason: 'origin-set-cookie' }],
    ['gzip', 200, [JSON_TYPE, ['content-encoding', 'gzip']], { reason: 'origin-encoded' }],
    ['identity encoding', 200, [JSON_TYPE, ['content-encoding', 'identity']], lifetime(60)],
    ['vary on a keyed header', 200, [JSON_TYPE, ['vary', 'Accept, Authorization']], lifetime(60)],
    ['vary on an unkeyed header', 200, [JSON_TYPE, ['vary', 'X-Tenant']], { reason: 'origin-vary' }],
    ['vary *', 200, [JSON_TYPE, ['vary', 'Accept, *']], { reason: 'origin-vary-star' }],
    ['content-length over the limit', 200, [JSON_TYPE, ['content-length', '1001']], { reason: 'response-too-large' }],
    ['set-cookie2', 200, [JSON_TYPE, ['set-cookie2', 'a=b; Version=1']], { reason: 'origin-set-cookie' }],
    ["an upstream cache's Age without freshness of the origin's: the rule's lifetime less it", 200, [JSON_TYPE, ['age', '20']], lifetime(40)],
    ["an upstream cache's Age past the rule's lifetime", 200, [JSON_TYPE, ['age', '100000']], { reason: 'origin-expired' }],
    ['an Age that is a list', 200, [JSON_TYPE, ['age', '100000, 100000']], { reason: 'origin-expired' }],
    ['two Age lines that disagree', 200, [JSON_TYPE, ['age', '1'], ['age', '100000']], { reason: 'origin-expired' }],
    ["an upstream cache's Age, the origin's freshness longer than the rule's", 200, [JSON_TYPE, ['cache-control', 'max-age=600'], ['age', '20']], lifetime(40)],
  ] as Array<[string, number, Array<[string, string]>, object]>)('%s', (_name, status, headers, verdict) => {
    expect(storeVerdict(status, headers, context)).toEqual(verdict);
  });

  it("under ignoreOriginCacheControl takes the rule's lifetime, but still refuses what the origin forbids storing", () => {
    const ignoring = { ...context, ignoreOriginCacheControl: true };
    expect(storeVerdict(200, [JSON_TYPE, ['cache-control', 'max-age=5']], ignoring)).toEqual(lifetime(60));
    expect(storeVerdict(200, [JSON_TYPE, ['cache-control', 'max-age=0']], ignoring)).toEqual(lifetime(60));
    expect(storeVerdict(200, [JSON_TYPE, ['expires', '0']], ignoring)).toEqual(lifetime(60));
    expect(storeVerdict(200, [JSON_TYPE, ['cache-control', 'no-store']], ignoring)).toEqual({ reason: 'origin-no-store' });
    expect(storeVerdict(200, [JSON_TYPE, ['cache-control', 'private']], ignoring)).toEqual({ reason: 'origin-private' });
    expect(storeVerdict(200, [JSON_TYPE, ['vary', 'cookie']], ignoring)).toEqual({ reason: 'origin-vary' });
    expect(storeVerdict(200, [JSON_TYPE, ['cache-control', 'max-age=0, foo="x, no-store']], ignoring)).toEqual({ reason: 'origin-cache-control-invalid' });
  });

  it.each([
    ['must-revalidate', 'max-age=1, must-revalidate', lifetime(1, 0, 0)],
    ['proxy-revalidate', 'max-age=1, proxy-revalidate', lifetime(1, 0, 0)],
    ['s-maxage', 's-maxage=1', lifetime(1, 0, 0)],
    ['stale-if-error=0', 'max-age=1, stale-if-error=0', lifetime(1, 30, 0)],
    ['stale-while-revalidate=0', 'max-age=1, stale-while-revalidate=0', lifetime(1, 0, 600)],
    ['windows shorter than the rules', 'max-age=1, stale-while-revalidate=5, stale-if-error=60', lifetime(1, 5, 60)],
    ['windows longer than the rules', 'max-age=1, stale-while-revalidate=300, stale-if-error=6000', lifetime(1, 30, 600)],
  ])("bounds the rules' stale windows by the origin's %s", (_name, cacheControl, verdict) => {
    expect(storeVerdict(200, [JSON_TYPE, ['cache-control', cacheControl]], context)).toEqual(verdict);
  });

  it('gives no stale window the rules do not give', () => {
    const withoutStale = { ...context, rules: { maxAge: 60, swr: 0, staleIfError: 0 } };
    expect(storeVerdict(200, [JSON_TYPE, ['cache-control', 'max-age=60, stale-while-revalidate=30, stale-if-error=600']], withoutStale)).toEqual(lifetime(60, 0, 0));
  });

  it("under ignoreOriginCacheControl still keeps to the origin's word on serving stale", () => {
    const ignoring = { ...context, ignoreOriginCacheControl: true };
    expect(storeVerdict(200, [JSON_TYPE, ['cache-control', 'max-age=0, must-revalidate']], ignoring)).toEqual(lifetime(60, 0, 0));
    expect(storeVerdict(200, [JSON_TYPE, ['cache-control', 'max-age=5, stale-if-error=10']], ignoring)).toEqual(lifetime(60, 30, 10));
  });

  it('tells GraphQL JSON, streamed and encoded bodies', () => {
    expect([isGraphQLJson([JSON_TYPE]), isGraphQLJson([]), isEncoded([['content-encoding', 'br']]), isEncoded([])]).toEqual([true, false, true, false]);
    // An empty list of codings, and several, as clients read them (RFC 9110 section 8.4).
    const encoded = (...values: string[]) => isEncoded(values.map((value) => ['content-encoding', value] as [string, string]));
    expect([encoded(''), encoded(' Identity '), encoded('identity', 'gzip'), encoded('x-gzip'), encoded('compress')]).toEqual([false, false, true, true, true]);
    expect([isStreaming([['content-type', 'Text/Event-Stream; charset=utf-8']]), isStreaming([JSON_TYPE])]).toEqual([true, false]);
  });
});

describe('cachePolicyFor', () => {
  const selection = { types: new Set(['Query', 'Todo']), fields: new Set(['Query.todos', 'Todo.id', 'Todo.title']), untypedSelection: false };

  it('takes the smallest maxAge, swr and staleIfError and the union of scopes of every matched rule', () => {
    const rules = [
      { types: ['Query'], maxAge: 900, swr: 100, staleIfError: 600, scope: 'PUBLIC' },
      { types: { Todo: ['title'] }, maxAge: 10, swr: 300, staleIfError: 60, scope: 'B' },
      { types: { Todo: [] }, maxAge: 20, swr: 5, staleIfError: 3600, scope: 'A' },
      { types: ['User'], maxAge: 1, swr: 0, staleIfError: 0 },
    ];
    expect(cachePolicyFor(rules as never, selection)).toEqual({ maxAge: 10, swr: 5, staleIfError: 60, scopes: ['A', 'B'], matched: rules.slice(0, 3) });
  });

  it('is undefined when no rule matches', () => {
    expect(cachePolicyFor([{ types: { Todo: ['done'] }, maxAge: 1, swr: 0 }] as never, selection)).toBeUndefined();
  });
});

describe('documentHashOf', () => {
  it('tells apart the operations of one document, whose normalised text they share', () => {
    const document = parse('query A { todos { id } } query B { users { id } }');
    const normalised = 'query A {\n  todos {\n    id\n  }\n}\n\nquery B {\n  users {\n    id\n  }\n}';
    expect(documentHashOf({ document: parse('query A { todos { id } }'), name: 'A', normalised })).not.toBe(
      documentHashOf({ document, name: 'B', normalised }),
    );
  });
});

describe('Exchange', () => {
  it('summarises an operation: name, a 12-hex document hash, origin latency from forward to response headers', () => {
    let clock = 100;
    const exchange = new Exchange({ method: 'POST', path: '/graphql', headers: [], hasBody: true }, () => clock);
    exchange.describeOperation('', documentHashOf({ document: parse('{ todos { id } }'), name: '', normalised: '{ todos { id } }' }));
    exchange.forward({ kind: 'pass', reason: 'no-rule' });
    clock = 142;
    exchange.responseArrived([], { kind: 'pass', reason: 'no-rule' });
    exchange.settle('PASS', { passReason: 'no-rule' });
    expect(exchange.summary()).toEqual({
      outcome: 'PASS',
      passReason: 'no-rule',
      errorCode: undefined,
      operationName: '',
      documentHash: expect.stringMatching(/^[0-9a-f]{12}$/),
      originLatencyMs: 42,
      bytesServedFromCache: 0,
    });
  });

  it('releases its leadership exactly once, on dispose or when the plan no longer stores', () => {
    let released = 0;
    const exchange = new Exchange(undefined);
    exchange.lead({ release: () => (released += 1) });
    exchange.responseArrived([], { kind: 'pass', reason: 'origin-status' });
    exchange.dispose();
    exchange.dispose();
    expect(released).toBe(1);
  });

  it('lets a leadership go at once when its stream ended while the lookup that brought it was in flight', () => {
    let released = 0;
    const exchange = new Exchange(undefined);
    exchange.dispose();
    exchange.lead({ release: () => (released += 1) });
    expect(released).toBe(1);
  });
});

describe('explanationHeaders', () => {
  it('says nothing unless asked, and carries the pass reason as its code', () => {
    expect(explanationHeaders(undefined, 'no-rule')).toEqual([]);
    expect(explanationHeaders({ scope: 'PUBLIC', bucket: 'PUBLIC', rules: 'todos \u00e9' }, 'origin-vary')).toEqual([
      ['svc-debug-scope', 'PUBLIC'],
      ['svc-debug-bucket', 'PUBLIC'],
      ['svc-debug-rules', 'todos ?'],
      ['svc-debug-pass-reason', 'origin-vary'],
    ]);
  });
});
