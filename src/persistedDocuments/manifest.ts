import { readJson } from '../graphql/index.js';

/**
 * The origin's stored documents (trusted documents, persisted documents), read from the manifest
 * its clients were built with (`persistedDocuments.manifest`, README, Stored documents sent by id):
 * with it svc-cache knows what a request that names a document by its id runs, so such a request is
 * cached and invalidates like one that sends the text.
 */

/** Document id to document text. */
export type PersistedDocuments = ReadonlyMap<string, string>;

export type ManifestReading = { kind: 'documents'; documents: PersistedDocuments } | { kind: 'problem'; problem: string };

/**
 * A manifest in either form clients' build tools write:
 * - Apollo's: `{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id":…,"body":…},…]}`;
 * - a flat object of id to text: Relay's `persisted_queries.json`, GraphQL Code Generator's
 *   `persisted-documents.json`, envelop's JSON file store.
 */
export function readManifest(text: string): ManifestReading {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return problem(`expected JSON: ${(error as Error).message}`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return problem(EXPECTED_FORMS);
  // JSON.parse keeps the last of a repeated key; another parser may keep the first, and svc-cache
  // would then read one text under an id where the origin runs another.
  if (readJson(text) === 'ambiguous') return problem('a key is given twice with different values, which JSON parsers read differently');
  const manifest = json as Record<string, unknown>;
  if ('format' in manifest) return readApolloManifest(manifest);
  const documents = new Map<string, string>();
  for (const [id, body] of Object.entries(manifest)) {
    if (typeof body !== 'string') return problem(`the document ${JSON.stringify(id)} is not a string; ${EXPECTED_FORMS}`);
    documents.set(id, body);
  }
  return { kind: 'documents', documents };
}

const APOLLO_FORMAT = 'apollo-persisted-query-manifest';
const EXPECTED_FORMS = `expected an object of document id to document text, or an Apollo manifest ({"format":"${APOLLO_FORMAT}","version":1,"operations":[…]})`;

function readApolloManifest(manifest: Record<string, unknown>): ManifestReading {
  if (manifest.format !== APOLLO_FORMAT || manifest.version !== 1) {
    return problem(`unknown manifest format ${JSON.stringify(manifest.format)} version ${JSON.stringify(manifest.version)}; ${EXPECTED_FORMS}`);
  }
  if (!Array.isArray(manifest.operations)) return problem('"operations" is not an array');
  const documents = new Map<string, string>();
  for (const [index, operation] of manifest.operations.entries()) {
    const { id, body } = (typeof operation === 'object' && operation !== null ? operation : {}) as Record<string, unknown>;
    if (typeof id !== 'string' || typeof body !== 'string') return problem(`operations[${index}] needs a string "id" and "body"`);
    // One id naming two texts would leave svc-cache to guess which one the origin runs.
    if (documents.has(id) && documents.get(id) !== body) return problem(`the id ${JSON.stringify(id)} names two different documents`);
    documents.set(id, body);
  }
  return { kind: 'documents', documents };
}

function problem(text: string): ManifestReading {
  return { kind: 'problem', problem: text };
}
