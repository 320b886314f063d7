import { describe, expect, it } from 'vitest';
import { Exchange } from '../../src/engine/exchange.js';
import { freshLifetime, isEncoded, isGraphQLJson, uncacheableReason } from '../../src/engine/originResponse.js';
import { cachePolicyFor } from '../../src/engine/rules.js';
import { explanationHeaders } from '../../src/engine/responses.js';

/** Cacheability of an origin response by its headers, rule matching, and what an Exchange reports. */

const JSON_TYPE: [string, string] = ['content-type', 'application/json'];
const keyed = new Set(['accept', 'authorization']);

describe('uncacheableReason', () => {
  it.each([
    ['a 200 GraphQL JSON answer', 200, [JSON_TYPE], undefined],
    ['graphql-response+json', 200, [['content-type', 'application/graphql-response+json; charset=utf-8']], undefined],
    ['a non-200 status', 404, [JSON_TYPE], 'origin-status'],
    ['text/html', 200, [['content-type', 'text/html']], 'origin-content-type'],
    ['no-store', 200, [JSON_TYPE, ['cache-control', 'max-age=5, No-Store']], 'origin-no-store'],
    ['no-cache', 200, [JSON_TYPE, ['cache-control', 'no-cache']], 'origin-no-cache'],
    ['private', 200, [JSON_TYPE, ['cache-control', 'private']], 'origin-private'],
    ['set-cookie', 200, [JSON_TYPE, ['set-cookie', 'a=b']], 'origin-set-cookie'],
    ['gzip', 200, [JSON_TYPE, ['content-encoding', 'gzip']], 'origin-encoded'],
    ['identity encoding', 200, [JSON_TYPE, ['content-encoding', 'identity']], undefined],
    ['vary on a keyed header', 200, [JSON_TYPE, ['vary', 'Accept, Authorization']], undefined],
    ['vary on an unkeyed header', 200, [JSON_TYPE, ['vary', 'X-Tenant']], 'origin-vary'],
    ['content-length over the limit', 200, [JSON_TYPE, ['content-length', '1001']], 'response-too-large'],
  ] as Array<[string, number, Array<[string, string]>, string | undefined]>)('%s: %s', (_name, status, headers, reason) => {
    expect(uncacheableReason(status, headers, keyed, 1000)).toBe(reason);
  });

  it('tells GraphQL JSON and encoded bodies', () => {
    expect([isGraphQLJson([JSON_TYPE]), isGraphQLJson([]), isEncoded([['content-encoding', 'br']]), isEncoded([])]).toEqual([true, false, true, false]);
  });
});

describe('freshLifetime', () => {
  it('takes the shorter of the rule and the origin s-maxage or max-age, unless told to ignore the origin', () => {
    expect(freshLifetime(60, [['cache-control', 'max-age=5']], false)).toBe(5);
    expect(freshLifetime(60, [['cache-control', 's-maxage=7, max-age=5']], false)).toBe(7);
    expect(freshLifetime(60, [['cache-control', 'max-age=600']], false)).toBe(60);
    expect(freshLifetime(60, [['cache-control', 'max-age=5']], true)).toBe(60);
    expect(freshLifetime(60, [], false)).toBe(60);
  });
});

describe('cachePolicyFor', () => {
  const selection = { types: new Set(['Query', 'Todo']), fields: new Set(['Query.todos', 'Todo.id', 'Todo.title']) };

  it('takes the smallest maxAge and swr and the union of scopes of every matched rule', () => {
    const rules = [
      { types: ['Query'], maxAge: 900, swr: 100, scope: 'PUBLIC' },
      { types: { Todo: ['title'] }, maxAge: 10, swr: 300, scope: 'B' },
      { types: { Todo: [] }, maxAge: 20, swr: 5, scope: 'A' },
      { types: ['User'], maxAge: 1, swr: 0 },
    ];
    expect(cachePolicyFor(rules as never, selection)).toEqual({ maxAge: 10, swr: 5, scopes: ['A', 'B'], matched: rules.slice(0, 3) });
  });

  it('is undefined when no rule matches', () => {
    expect(cachePolicyFor([{ types: { Todo: ['done'] }, maxAge: 1, swr: 0 }] as never, selection)).toBeUndefined();
  });
});

describe('Exchange', () => {
  it('summarises an operation: name, a 12-hex document hash, origin latency from forward to response headers', () => {
    let clock = 100;
    const exchange = new Exchange({ method: 'POST', path: '/graphql', headers: [], hasBody: true }, () => clock);
    exchange.describeOperation('', '{ todos { id } }');
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
