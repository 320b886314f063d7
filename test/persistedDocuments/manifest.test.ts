import { describe, expect, it } from 'vitest';
import { readManifest } from '../../src/persistedDocuments/index.js';

describe('readManifest', () => {
  it('reads a flat object of id to text (Relay, GraphQL Code Generator, envelop)', () => {
    // A key repeated with the same text is one document, whichever one a parser keeps.
    expect(readManifest('{"a1":"query A { a }","b2":"mutation B { b }","a1":"query A { a }"}')).toEqual({
      kind: 'documents',
      documents: new Map([
        ['a1', 'query A { a }'],
        ['b2', 'mutation B { b }'],
      ]),
    });
  });

  it("reads Apollo's persisted query manifest", () => {
    const manifest = {
      format: 'apollo-persisted-query-manifest',
      version: 1,
      operations: [
        { id: 'h1', name: 'A', type: 'query', body: 'query A { a }' },
        { id: 'h1', name: 'A', type: 'query', body: 'query A { a }' },
        { id: 'h2', name: 'B', type: 'mutation', body: 'mutation B { b }' },
      ],
    };
    expect(readManifest(JSON.stringify(manifest))).toEqual({
      kind: 'documents',
      documents: new Map([
        ['h1', 'query A { a }'],
        ['h2', 'mutation B { b }'],
      ]),
    });
  });

  it.each([
    ['{', /^expected JSON: /],
    ['[]', /^expected an object of document id to document text, or an Apollo manifest/],
    ['{"a":1}', /^the document "a" is not a string; expected an object/],
    ['{"format":"apollo-persisted-query-manifest","version":2,"operations":[]}', /^unknown manifest format "apollo-persisted-query-manifest" version 2; /],
    ['{"format":"apollo-persisted-query-manifest","version":1}', /^"operations" is not an array$/],
    ['{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id":"a"}]}', /^operations\[0\] needs a string "id" and "body"$/],
    ['{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id":"a","body":"{ a }"},{"id":"a","body":"{ b }"}]}', /^the id "a" names two different documents$/],
    ['{"a":"{ a }","b":"{ b }","a":"mutation { m }"}', /^a key is given twice with different values, which JSON parsers read differently$/],
  ])('refuses %s', (text, problem) => {
    const reading = readManifest(text);
    expect(reading.kind).toBe('problem');
    expect(reading.kind === 'problem' && reading.problem).toMatch(problem);
  });
});
