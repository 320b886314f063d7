import { describe, expect, it } from 'vitest';
import { batchForOrigin, rewrittenForOrigin } from '../../src/graphql/httpRequest.js';

const body = (text: string) => Buffer.from(text);
const unchangedText = { query: undefined, withoutPersistedQuery: false } as const;

describe('rewrittenForOrigin', () => {
  it('replaces the query text and keeps every other member as sent', () => {
    const sent = body('{"query":"{ a }","variables":{"n":1.0,"big":9007199254740993},"id":"A"}');
    const origin = rewrittenForOrigin('POST', '/graphql', sent, { query: '{ a __typename }', withoutPersistedQuery: false, withoutId: false });
    // Members come in the canonical order; JSON gives it no meaning.
    expect(origin).toEqual({ body: body('{"id":"A","query":"{ a __typename }","variables":{"n":1.0,"big":9007199254740993}}') });
  });

  it("leaves out a POST's id member, of any value, keeping the text and the other members as sent", () => {
    for (const id of ['"TodosQuery"', '7', 'null']) {
      const sent = body(`{"id":${id},"query":"{ a }","variables":{"n":1.0},"tenant":"acme"}`);
      expect(rewrittenForOrigin('POST', '/graphql', sent, { ...unchangedText, withoutId: true })).toEqual({
        body: body('{"query":"{ a }","tenant":"acme","variables":{"n":1.0}}'),
      });
    }
  });

  it("leaves out a POST's id URL parameter, in any case, and keeps its other pairs and a body without an id as sent", () => {
    const sent = body('{"variables":{"n":1.0},"query":"{ a }"}');
    expect(rewrittenForOrigin('POST', '/graphql?ID=A&tenant=a%20b&x=1;id=2', sent, { ...unchangedText, withoutId: true })).toEqual({
      path: '/graphql?tenant=a%20b&x=1;id=2',
    });
    expect(rewrittenForOrigin('POST', '/graphql?%69d=A', sent, { ...unchangedText, withoutId: true })).toEqual({ path: '/graphql' });
    expect(rewrittenForOrigin('POST', '/graphql?tenant=a', sent, { ...unchangedText, withoutId: true })).toEqual({});
  });

  it('leaves a POST body that is not one JSON object as it came', () => {
    for (const sent of [body('query=%7B%20a%20%7D'), body('[{"query":"{ a }","id":"A"}]')]) {
      expect(rewrittenForOrigin('POST', '/graphql', sent, { query: '{ a __typename }', withoutPersistedQuery: false, withoutId: true })).toEqual({});
    }
  });

  it("leaves out a GET's id parameter, the query text as sent, and drops the `?` with the last pair", () => {
    const path = '/graphql?query=%7B%20a%20%7D&Id=A&variables=%7B%7D';
    expect(rewrittenForOrigin('GET', path, Buffer.alloc(0), { ...unchangedText, withoutId: true })).toEqual({ path: '/graphql?query=%7B%20a%20%7D&variables=%7B%7D' });
    expect(rewrittenForOrigin('GET', '/graphql?id=A', Buffer.alloc(0), { ...unchangedText, withoutId: true })).toEqual({ path: '/graphql' });
  });

  it("leaves out extensions' persistedQuery, every other extension with its text as sent", () => {
    const changes = { query: '{ a __typename }', withoutPersistedQuery: true, withoutId: false };
    const extensions = '{"persistedQuery":{"version":1,"sha256Hash":"h"},"sort":{"b":1,"a":2.0},"n":9007199254740993}';
    expect(rewrittenForOrigin('POST', '/graphql', body(`{"extensions":${extensions},"query":"{ a }"}`), changes)).toEqual({
      body: body('{"extensions":{"n":9007199254740993,"sort":{"b":1,"a":2.0}},"query":"{ a __typename }"}'),
    });
    expect(rewrittenForOrigin('GET', `/graphql?extensions=${encodeURIComponent(extensions)}&x=1`, Buffer.alloc(0), changes)).toEqual({
      path: `/graphql?x=1&query=${encodeURIComponent('{ a __typename }')}&extensions=${encodeURIComponent('{"n":9007199254740993,"sort":{"b":1,"a":2.0}}')}`,
    });
  });

  it('replaces the text and leaves out the id together', () => {
    const changes = { query: '{ a __typename }', withoutPersistedQuery: true, withoutId: true };
    expect(rewrittenForOrigin('POST', '/graphql', body('{"id":"A","query":"{ a }","extensions":{"persistedQuery":{}}}'), changes)).toEqual({
      body: body('{"query":"{ a __typename }"}'),
    });
    expect(rewrittenForOrigin('GET', '/graphql?id=A&query=%7B%20a%20%7D&extensions=%7B%7D', Buffer.alloc(0), changes)).toEqual({
      path: '/graphql?query=%7B%20a%20__typename%20%7D',
    });
  });
});

describe('batchForOrigin', () => {
  const ID_ONLY = { query: undefined, withoutPersistedQuery: false, withoutId: true };

  it('leaves out the id of the operations named, each other one as sent', () => {
    const sent = body('[{"id":"A","query":"{ a }"},{"id":"B","query":"{ b }"}, {"query":"{ c }","variables":{"n":1.0}}]');
    expect(batchForOrigin('/graphql', sent, [ID_ONLY, undefined, ID_ONLY])).toEqual({
      body: body('[{"query":"{ a }"},{"id":"B","query":"{ b }"},{"query":"{ c }","variables":{"n":1.0}}]'),
    });
    expect(batchForOrigin('/graphql?id=A&x=1', sent, [ID_ONLY, undefined, undefined])).toMatchObject({ path: '/graphql?x=1' });
  });

  it('expands a persisted query sent as its hash alone, its other extensions as sent, and keeps the URL of a batch without ids to leave out', () => {
    const hash = '{"version":1,"sha256Hash":"ab"}';
    const sent = body(`[{"extensions":{"persistedQuery":${hash},"clientLibrary":{"v":1.0}}},{"query":"{ b }"}]`);
    const expanded = { query: '{ a }', withoutPersistedQuery: true, withoutId: false };
    expect(batchForOrigin('/graphql?id=A', sent, [expanded, undefined])).toEqual({
      body: body('[{"extensions":{"clientLibrary":{"v":1.0}},"query":"{ a }"},{"query":"{ b }"}]'),
    });
  });
});
