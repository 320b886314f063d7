import { buildSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { configSchema, type Config } from '../../src/config/schema.js';
import { storedDocumentWarnings } from '../../src/engine/index.js';
import { demoSchemaSDL } from '../support/origin.js';

const schema = buildSchema(demoSchemaSDL);

function withManifest(documents: Record<string, string>, input: Record<string, unknown> = {}): Config {
  const config = configSchema.parse({ origin: { url: 'http://origin.test/graphql' }, rules: [{ types: ['Query'], maxAge: 60 }], persistedDocuments: { manifest: 'manifest.json' }, ...input });
  return { ...config, persistedDocuments: { manifest: 'manifest.json', documents: new Map(Object.entries(documents)) } };
}

describe('storedDocumentWarnings', () => {
  it('warns of a manifest without documents: every id a client sends goes on unseen', () => {
    expect(storedDocumentWarnings(withManifest({}), schema)).toEqual([
      'persistedDocuments: the manifest holds no documents: every id a client sends passes as an operation svc-cache cannot see (unknown-document-id), and a POST empties the store when the origin runs it',
    ]);
  });

  it('says nothing of documents svc-cache reads and caches, nor without a manifest', () => {
    const fine = withManifest({ a: 'query A { todos { id title author { id name } } }', b: 'mutation B { addTodo(title: "x") { title } }' });
    expect(storedDocumentWarnings(fine, schema)).toEqual([]);
    expect(storedDocumentWarnings(configSchema.parse({ origin: { url: 'http://origin.test/graphql' } }), schema)).toEqual([]);
  });

  it('names documents that do not parse, are over the limits, or are queries without __typename or their key fields, a few ids per kind', () => {
    const keyless = Object.fromEntries(Array.from({ length: 7 }, (_, index) => [`k${index}`, `query K${index} { todos { title } }`]));
    const config = withManifest(
      {
        broken: '{ todos { id }',
        deep: 'query Deep { todos { id author { id name } } }',
        large: `query Large { todos { id ${'title '.repeat(20)}} }`,
        ...keyless,
        untyped: 'query Untyped { node(id: "1") { id } }',
        newer: 'query Newer { todos { id priority } }',
        // A mutation goes without the added fields too, and invalidates its types whole instead.
        keylessMutation: 'mutation { addTodo(title: "x") { title } }',
      },
      { limits: { maxDepth: 1, maxQueryBytes: 100 } },
    );
    expect(storedDocumentWarnings(config, schema)).toEqual([
      `persistedDocuments: 1 manifest document does not parse: "broken". A request naming one passes as an operation svc-cache cannot see, and a POST empties the store when the origin runs it.`,
      `persistedDocuments: 2 manifest documents are over limits: "deep" (Deep: Query is deeper than 1 levels), "large" (Large: Query is 148 bytes; the limit is 100). A request naming one passes as an operation svc-cache cannot see, and a POST empties the store when the origin runs it; raise limits to cover them.`,
      `persistedDocuments: 1 manifest document does not validate against the schema: "newer" (Newer: Cannot query field "priority" on type "Todo".). svc-cache stores no answer to such a document that holds an entity without its key or objects where its schema has none, and such a mutation's answer empties every type queries hold; load the origin's schema, or mend the document.`,
      `persistedDocuments: 1 manifest document selects no __typename where a field can return several types: "untyped" (Untyped). svc-cache adds no field to a stored document, so the answers to such a document are never stored.`,
      `persistedDocuments: 7 manifest documents select objects without their key fields: "k0" (K0), "k1" (K1), "k2" (K2), "k3" (K3), "k4" (K4) and 2 more. svc-cache adds no field to a stored document, so a mutation or purge of any object of those types drops the answers to such a document.`,
    ]);
    // Without the schema, what the documents' text alone tells.
    expect(storedDocumentWarnings(config, undefined)).toHaveLength(2);
    // A document named by its operation's own name is named once.
    expect(storedDocumentWarnings(withManifest({ K0: 'query K0 { todos { title } }' }), schema)).toEqual([expect.stringContaining(': "K0". ')]);
    // A query no rule caches is never stored anyway.
    expect(storedDocumentWarnings(withManifest(keyless, { rules: [{ types: ['Mutation'], maxAge: 60 }] }), schema)).toEqual([]);
  });
});
