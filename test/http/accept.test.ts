import { describe, expect, it } from 'vitest';
import { acceptedEncoding, acceptedGraphQLResponseType, acceptsNoJson, hitNegotiation, mayAnswerWithHtml, namesStreamingType, ownAnswerMediaType } from '../../src/http/accept.js';

const GR = 'application/graphql-response+json';
const JSON_TYPE = 'application/json';
const URQL = 'application/graphql-response+json, application/json, text/event-stream, multipart/mixed';
const APOLLO_3 = '*/*';
const APOLLO_3_DEFER = 'multipart/mixed;deferSpec=20220824,application/json';
const APOLLO_4 = 'application/graphql-response+json,application/json;q=0.9';
const GRAPHQL_REQUEST = 'application/graphql-response+json, application/json';
const CURL = '*/*';

describe('acceptedGraphQLResponseType', () => {
  it.each([
    ['urql', URQL, JSON_TYPE, JSON_TYPE],
    ['urql', URQL, `${GR}; charset=utf-8`, `${GR}; charset=utf-8`],
    ['Apollo Client 3', APOLLO_3, `${JSON_TYPE}; charset=utf-8`, `${JSON_TYPE}; charset=utf-8`],
    ['Apollo Client 3', APOLLO_3, GR, GR],
    ['Apollo Client 3 with @defer', APOLLO_3_DEFER, GR, `${JSON_TYPE}`],
    ['Apollo Client 4', APOLLO_4, JSON_TYPE, JSON_TYPE],
    ['graphql-request', GRAPHQL_REQUEST, GR, GR],
    ['curl', CURL, JSON_TYPE, JSON_TYPE],
    ['no Accept', undefined, GR, GR],
    ['a blank Accept', '  ', JSON_TYPE, JSON_TYPE],
    ['application/*', 'application/*', GR, GR],
  ])('%s (%j) is answered a stored %j as %j', (_client, accept, stored, expected) => {
    expect(acceptedGraphQLResponseType(accept, stored)).toBe(expected);
  });

  it('answers with the other GraphQL JSON type, keeping the stored parameters, when only that one is accepted', () => {
    expect(acceptedGraphQLResponseType(GR, 'application/json; charset=utf-8')).toBe(`${GR}; charset=utf-8`);
    expect(acceptedGraphQLResponseType('application/json', GR)).toBe(JSON_TYPE);
    expect(acceptedGraphQLResponseType(`${GR};q=0, */*`, GR)).toBe(JSON_TYPE);
  });

  it('accepts a range naming charset=utf-8, as origins answer it with JSON, and passes another charset to the origin', () => {
    expect(acceptedGraphQLResponseType('application/json; charset=utf-8', JSON_TYPE)).toBe(JSON_TYPE);
    expect(acceptedGraphQLResponseType('application/json;charset=UTF-8', `${JSON_TYPE}; charset=utf-8`)).toBe(`${JSON_TYPE}; charset=utf-8`);
    // Quoted, as GraphQL Yoga and graphql-http compare it: 406.
    expect(acceptedGraphQLResponseType('application/json;charset="utf-8"', JSON_TYPE)).toBeUndefined();
    expect(acceptsNoJson('application/json;charset="utf-8"')).toBe(true);
    // Origins read the first charset, negotiator too, but as text: every one must be written plainly.
    expect(acceptedGraphQLResponseType('application/json;charset="utf-8";charset=utf-8', JSON_TYPE)).toBeUndefined();
    expect(acceptedGraphQLResponseType('application/json;q=0.9;CHARSET=UTF-8', JSON_TYPE)).toBe(JSON_TYPE);
    expect(acceptedGraphQLResponseType(`${GR}; charset=utf-8`, JSON_TYPE)).toBe(GR);
    expect(acceptedGraphQLResponseType('application/json; charset=iso-8859-1', JSON_TYPE)).toBeUndefined();
    expect(acceptsNoJson('application/json; charset=utf-8')).toBe(false);
  });

  it('reads the stored type case-insensitively and keeps it as stored when accepted', () => {
    expect(acceptedGraphQLResponseType('application/json', 'Application/JSON;charset=UTF-8')).toBe('Application/JSON;charset=UTF-8');
  });

  it.each([
    ['text/event-stream', JSON_TYPE],
    ['multipart/mixed;deferSpec=20220824', GR],
    ['text/html', JSON_TYPE],
    ['application/json;q=0, application/graphql-response+json;q=0, */*', JSON_TYPE],
    ['*/*;q=0', GR],
    ['application/*;q=0', JSON_TYPE],
    ['garbage', JSON_TYPE],
    [',,,', JSON_TYPE],
    ['application/json;q=abc', JSON_TYPE],
  ])('passes %j to the origin (stored %j)', (accept, stored) => {
    expect(acceptedGraphQLResponseType(accept, stored)).toBeUndefined();
  });

  it('never relabels a stored type that is not GraphQL JSON', () => {
    expect(acceptedGraphQLResponseType('*/*', 'text/plain')).toBeUndefined();
    expect(acceptedGraphQLResponseType(undefined, '')).toBeUndefined();
  });

  it('lets the most specific range decide, whatever the order', () => {
    expect(acceptedGraphQLResponseType('*/*, application/json;q=0', JSON_TYPE)).toBe(GR);
    expect(acceptedGraphQLResponseType('application/json;q=0, application/*', JSON_TYPE)).toBe(GR);
  });

  it('reads quoted parameters that hold commas as one range', () => {
    expect(acceptedGraphQLResponseType('multipart/mixed;x="a, application/json", text/event-stream', JSON_TYPE)).toBeUndefined();
  });
});

describe('acceptsNoJson', () => {
  it.each([
    ['text/event-stream', true],
    ['multipart/mixed;deferSpec=20220824', true],
    ['multipart/mixed', true],
    ['text/event-stream, multipart/mixed', true],
    ['application/json;q=0, text/event-stream', true],
    ['garbage', true],
    [URQL, false],
    [APOLLO_3, false],
    [APOLLO_3_DEFER, false],
    [APOLLO_4, false],
    [GRAPHQL_REQUEST, false],
    ['text/event-stream, application/*', false],
    ['text/event-stream;q=0, application/json', false],
    // negotiator reads `*` as any value; graphql-http answers 406, Yoga streams: the origin decides.
    ['application/json;charset=*', true],
    ['*/*;charset=*', true],
    ['text/event-stream, application/json;charset="*"', true],
    ['application/json;charset=*;q=0, application/graphql-response+json', true],
    ['text/plain;charset=*, application/json', false],
    [undefined, false],
    ['', false],
  ])('%j: %s, the first time and when remembered', (accept, expected) => {
    expect(acceptsNoJson(accept)).toBe(expected);
    expect(acceptsNoJson(accept)).toBe(expected);
  });

  it('an Accept too long to remember is read every time', () => {
    const padding = 'x-unknown/type;q=0.1, '.repeat(40);
    expect(acceptsNoJson(`${padding}text/event-stream`)).toBe(true);
    expect(acceptsNoJson(`${padding}application/json`)).toBe(false);
  });
});

describe('ownAnswerMediaType', () => {
  // It replaced the purge handler's own negotiation, whose table this includes.
  it.each([
    [undefined, JSON_TYPE],
    ['', JSON_TYPE],
    ['*/*', JSON_TYPE],
    ['application/*', JSON_TYPE],
    ['application/json', JSON_TYPE],
    ['text/html', JSON_TYPE],
    ['garbage', JSON_TYPE],
    [GR, GR],
    [`${GR}, application/json;q=0.9`, GR],
    // A tie goes to the type listed first, as Apollo Server 4, graphql-http and Yoga answer it.
    [`application/json, ${GR}`, JSON_TYPE],
    [`application/json;q=0.9, ${GR};q=0.9`, JSON_TYPE],
    // The wildcard is what decides for application/graphql-response+json here.
    ['*/*;q=0.5, application/json;q=0.1', GR],
    [`${GR};q=0.5, application/json`, JSON_TYPE],
    [`${GR};q=0, */*`, JSON_TYPE],
    [`${GR};q=0.5, */*;q=0.4`, GR],
    [`${GR};q=0.5, application/*;q=0.6`, JSON_TYPE],
    [`${GR};q=0.5, application/json;q=0.4, */*`, GR],
    [`${GR};q="0.8", application/json;q=0.7`, GR],
    // negotiator reads q=1.5 as 1.5, as Apollo Server 4 does.
    [`${GR};q=1.5, application/json`, GR],
    [`${GR};q=abc, application/json`, JSON_TYPE],
    [`${GR};charset=utf-8`, GR],
    ['APPLICATION/GRAPHQL-RESPONSE+JSON', GR],
    [URQL, GR],
    [APOLLO_3, JSON_TYPE],
    [APOLLO_3_DEFER, JSON_TYPE],
    [APOLLO_4, GR],
    [GRAPHQL_REQUEST, GR],
    ['text/event-stream', JSON_TYPE],
  ])('answers %j in %s', (accept, expected) => {
    expect(ownAnswerMediaType(accept)).toBe(expected);
  });
});

describe('acceptedEncoding: the coding a HIT is answered in', () => {
  it.each([
    [undefined, 'gzip', 'identity'],
    ['', 'gzip', 'identity'],
    ['gzip, deflate', 'gzip', 'gzip'],
    ['gzip, deflate, br, zstd', 'br', 'br'],
    ['gzip, deflate', 'br', 'identity'],
    ['GZIP;q=0.1, identity', 'gzip', 'gzip'],
    ['gzip;q=0', 'gzip', 'identity'],
    ['*', 'gzip', 'gzip'],
    ['br, identity;q=0', 'gzip', undefined],
    ['*;q=0', 'gzip', undefined],
    ['identity;q=0', 'identity', 'identity'],
  ])('answers accept-encoding %j with %s stored in %s', (acceptEncoding, stored, expected) => {
    expect(acceptedEncoding(acceptEncoding, stored)).toBe(expected);
  });
});

describe('hitNegotiation: the type and coding of a HIT, remembered per pair of headers', () => {
  const STORED = 'application/json; charset=utf-8';

  it.each([
    [URQL, 'gzip, deflate, br', 'gzip', { contentType: `${GR}; charset=utf-8`, encoding: 'gzip' }],
    [APOLLO_3, 'gzip', 'gzip', { contentType: STORED, encoding: 'gzip' }],
    [APOLLO_4, undefined, 'gzip', { contentType: `${GR}; charset=utf-8`, encoding: 'identity' }],
    [undefined, 'br;q=0, gzip', 'br', { contentType: STORED, encoding: 'identity' }],
    ['text/html', 'gzip', 'gzip', undefined],
    [JSON_TYPE, 'gzip, identity;q=0', 'br', undefined],
  ])('Accept %j, Accept-Encoding %j, stored %s: %j, the first time and when remembered', (accept, acceptEncoding, stored, expected) => {
    expect(hitNegotiation(accept, acceptEncoding, STORED, stored)).toEqual(expected);
    expect(hitNegotiation(accept, acceptEncoding, STORED, stored)).toEqual(expected);
  });

  it.each([
    ['a browser navigating (GraphiQL servers answer it with HTML)', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'],
    ['a type ranked above JSON', 'application/json;q=0.5, text/plain'],
    ['a type ranked above both GraphQL JSON types', `${GR};q=0.4, application/json;q=0.3, application/xml;q=0.5`],
    ['a streaming type ranked above JSON', 'text/event-stream, application/json;q=0.9'],
    ['a type ranked above a wildcard that alone covers JSON', 'Text/HTML, application/*;q=0.9'],
  ])('passes %s (%j): the origin may answer in that type', (_name, accept) => {
    expect(hitNegotiation(accept, undefined, STORED, 'identity')).toBeUndefined();
    expect(hitNegotiation(accept, undefined, STORED, 'identity')).toBeUndefined();
  });

  it.each([
    ['axios', 'application/json, text/plain, */*', STORED],
    ['curl and Apollo Client 3', '*/*', STORED],
    ['no Accept', undefined, STORED],
    ['a type at the same q as JSON', 'text/html, application/json', STORED],
    ['a type below JSON', `text/html;q=0.5, ${GR}`, `${GR}; charset=utf-8`],
    ['a wildcard above JSON', 'application/json;q=0.5, text/*', STORED],
    ['a type refused', 'text/html;q=0, */*', STORED],
  ])('answers %s (%j) from the cache', (_name, accept, contentType) => {
    expect(hitNegotiation(accept, undefined, STORED, 'identity')).toEqual({ contentType, encoding: 'identity' });
  });

  it('an absent header is not an empty one: no Accept-Encoding means identity, an empty one too, but they are read apart', () => {
    expect(hitNegotiation(JSON_TYPE, undefined, STORED, 'gzip')).toEqual({ contentType: STORED, encoding: 'identity' });
    expect(hitNegotiation(JSON_TYPE, '', STORED, 'gzip')).toEqual({ contentType: STORED, encoding: 'identity' });
    expect(hitNegotiation(undefined, 'gzip', STORED, 'gzip')).toEqual({ contentType: STORED, encoding: 'gzip' });
    expect(hitNegotiation('', 'gzip', STORED, 'gzip')).toEqual({ contentType: STORED, encoding: 'gzip' });
  });

  it('headers too long to remember, and more distinct pairs than are remembered, are still negotiated right', () => {
    const long = `${'x-unknown/type;q=0.1, '.repeat(40)}${GR}`;
    expect(hitNegotiation(long, 'gzip', STORED, 'gzip')).toEqual({ contentType: `${GR}; charset=utf-8`, encoding: 'gzip' });
    for (let index = 0; index < 3000; index++) {
      const refusing = index % 2 === 0;
      const accept = refusing ? `text/x-${index}` : `${JSON_TYPE}, text/x-${index}`;
      expect(hitNegotiation(accept, 'gzip', STORED, 'gzip')).toEqual(refusing ? undefined : { contentType: STORED, encoding: 'gzip' });
    }
    expect(hitNegotiation('text/x-0', 'gzip', STORED, 'gzip')).toBeUndefined();
  });
});

describe('mayAnswerWithHtml: a GET an origin may answer with its IDE or landing page', () => {
  it.each([
    // Yoga: text/html anywhere, in any case, at any q.
    ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', true],
    ['application/json, TEXT/HTML;q=0', true],
    // Apollo Server 4: negotiator picks text/html among the types it serves.
    ['text/*, */*;q=0.5', true],
    ['text/*;q=0.9, application/json;q=0.8', true],
    // negotiator 0.6 (Apollo's) and 1.1 (svc-cache's) read odd ranges apart: any text/* counts.
    ['text/*;q=0.9;ext=1, application/json;q=0.8', true],
    ['application/json, text/*', true],
    ['*/*', false],
    ['application/json, text/plain, */*', false],
    [undefined, false],
  ])('%j: %s', (accept, expected) => {
    expect(mayAnswerWithHtml(accept)).toBe(expected);
  });
});

describe('namesStreamingType', () => {
  it.each([
    [URQL, true],
    [APOLLO_3_DEFER, true],
    ['text/event-stream', true],
    ['Multipart/Mixed;deferSpec=20220824, application/json', true],
    ['*/*', false],
    ['text/*, application/json', false],
    ['text/event-stream;q=0, */*', false],
    [APOLLO_3, false],
    [undefined, false],
    ['', false],
  ])('%j: %s, the first time and when remembered', (accept, expected) => {
    expect(namesStreamingType(accept)).toBe(expected);
    expect(namesStreamingType(accept)).toBe(expected);
  });
});
