import { hash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/index.js';
import { cacheKey, taggingPart } from '../../src/engine/cacheKey.js';
import { keyedHeaders } from '../../src/http/requestTarget.js';

describe('cacheKey', () => {
  it('keeps the keys of earlier versions, so an upgrade finds the entries stored before it', () => {
    // Values computed by the previous implementation, which hashed each part with an update of its own.
    expect(cacheKey('PUBLIC', { host: 'http://api.example', endpoint: '/graphql', parameters: '', keyedHeaders: '' }, 'Todos', 'query Todos {\n  todos {\n    id\n  }\n}', '{"first":10}', '', '')).toBe(
      'PUBLIC/psbfrItfsXl1hwZhnmOoeyta6levBQjZcIBSTsZRFdA',
    );
    expect(cacheKey('b', { host: 'h', endpoint: '/e', parameters: '', keyedHeaders: '' }, '', 'd', '{}', '', '')).toBe('b/rhLTmCS2UBmWT0PYXnVLN6pBuLpw4Sj02UYrFuei9AE');
    // Non-ASCII text, a surrogate pair and lone surrogates (UTF-8 encodes each lone one as U+FFFD).
    const text = 'query Grüße { todos(filter: "日本語 \ud83d\ude00 \ud800") { id } }';
    expect(cacheKey('TEAM:x', { host: 'bücher.example', endpoint: '/graphql', parameters: '', keyedHeaders: '' }, 'Grüße', text, '{"q":"é\udfff"}', '', '')).toBe(
      'TEAM:x/FJak19RD_u_U5-y5f0gAEE9rAvapgSjphyYpJmmBrok',
    );
  });

  it('tells apart parts that would read the same run together', () => {
    const target = { host: 'h', endpoint: '/e', parameters: '', keyedHeaders: '' };
    expect(cacheKey('b', target, 'ab', 'c', '{}', '', '')).not.toBe(cacheKey('b', target, 'a', 'bc', '{}', '', ''));
    expect(cacheKey('b', { ...target, parameters: 'x' }, 'a', 'd', '{}', '', '')).not.toBe(cacheKey('b', target, 'a', 'd', '{}', 'x', ''));
  });

  it("keys a POST body's other members after every other part, leaving the keys of requests without them", () => {
    const target = { host: 'h', endpoint: '/e', parameters: '', keyedHeaders: '' };
    const plain = cacheKey('b', target, '', 'd', '{}', '', '');
    expect(cacheKey('b', target, '', 'd', '{}', '', '{"documentId":"x"}')).not.toBe(plain);
    expect(cacheKey('b', target, '', 'd', '{}', '', '{"documentId":"x"}')).not.toBe(cacheKey('b', target, '', 'd', '{}', '', '{"documentId":"y"}'));
    expect(cacheKey('b', target, '', 'd', '{}', '', '{"documentId":"x"}')).toBe(
      `b/${hash('sha256', 'h\u0000/e\u0000\u0000d\u0000{}\u0000\u0000\u0000\u0000{"documentId":"x"}', 'base64url')}`,
    );
    // The same text as forwarded hosts, as extensions or as URL parameters is another key.
    const members = '{"a":1}';
    const withMembers = cacheKey('b', target, '', 'd', '{}', '', members);
    expect(cacheKey('b', { ...target, keyedHeaders: `\u0000x-forwarded-host:${members}` }, '', 'd', '{}', '', '')).not.toBe(withMembers);
    expect(cacheKey('b', target, '', 'd', '{}', members, '')).not.toBe(withMembers);
    expect(cacheKey('b', { ...target, parameters: members }, '', 'd', '{}', '', '')).not.toBe(withMembers);
  });

  it('never gives a key an earlier version gave another request: forwarded host headers were keyed after two NULs', () => {
    const target = { host: 'h', endpoint: '/e', parameters: '', keyedHeaders: keyedHeaders([['x-forwarded-host', 'shop.example.com'], ['x-forwarded-proto', 'https']], false) };
    // X-Forwarded-Host: x-forwarded-host:shop.example.com and Forwarded: host=x-forwarded-proto:https, as an earlier version keyed them.
    const earlier = `b/${hash('sha256', 'h\u0000/e\u0000\u0000d\u0000{}\u0000\u0000x-forwarded-host:shop.example.com\u0000x-forwarded-proto:https', 'base64url')}`;
    expect(cacheKey('b', target, '', 'd', '{}', '', '')).not.toBe(earlier);
  });

  it('keys the URL parameters other than GraphQL\'s and the extensions other than persistedQuery, when there are any', () => {
    const target = { host: 'h', endpoint: '/e', parameters: '', keyedHeaders: '' };
    const plain = cacheKey('b', target, '', 'd', '{}', '', '');
    expect(cacheKey('b', { ...target, parameters: 'tenant=acme' }, '', 'd', '{}', '', '')).not.toBe(plain);
    expect(cacheKey('b', target, '', 'd', '{}', '{"tenant":"acme"}', '')).not.toBe(plain);
    expect(cacheKey('b', { ...target, keyedHeaders: '\u0000x-forwarded-host:evil.example' }, '', 'd', '{}', '', '')).not.toBe(plain);
    // A request without forwarded host headers keys as it did before they were keyed.
    expect(cacheKey('b', { ...target, parameters: 'tenant=acme' }, '', 'd', '{}', '{"t":1}', '')).toBe(
      `b/${hash('sha256', 'h\u0000/e\u0000\u0000d\u0000{}\u0000tenant=acme\u0000{"t":1}', 'base64url')}`,
    );
  });

  it('holds how the configuration tags entries, and nothing under the defaults, so such keys stay as they were', () => {
    const config = (input: Record<string, unknown>) => configSchema.parse({ origin: { url: 'http://origin.test/graphql' }, ...input });
    expect(taggingPart(config({}))).toBe('');
    expect(taggingPart(config({ keyFields: { defaults: ['id', '_id'] }, listArguments: { mode: 'match' } }))).toBe('');
    const parts = [
      taggingPart(config({ keyFields: { types: { Product: ['sku'] } } })),
      taggingPart(config({ keyFields: { defaults: ['id'] } })),
      taggingPart(config({ listArguments: { fields: { 'Query.usersByTeam.team': 'User.teamId' } } })),
      taggingPart(config({ listArguments: { mode: 'any' } })),
    ];
    expect(new Set(parts).size).toBe(4);
    for (const part of parts) expect([part.length, part.startsWith('\r'), part.endsWith('\u0000')]).toEqual([45, true, true]);
    expect(taggingPart(config({ keyFields: { types: { Product: ['sku'] } } }))).toBe(parts[0]);
    // The review: the same mappings written in another order must not start every entry anew.
    const twoTypes = (types: Record<string, string[]>) => taggingPart(config({ keyFields: { types } }));
    expect(twoTypes({ Product: ['sku'], Order: ['number'] })).toBe(twoTypes({ Order: ['number'], Product: ['sku'] }));
    const target = { host: 'h', endpoint: '/e', parameters: '', keyedHeaders: '' };
    expect(cacheKey('b', target, 'a', 'd', '{}', '', '', parts[0])).not.toBe(cacheKey('b', target, 'a', 'd', '{}', '', ''));
  });
});
