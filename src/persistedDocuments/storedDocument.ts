/** What a request sends that may name a stored document. */
export interface DocumentReference {
  /** The query text sent, undefined when none: a request that sends one runs it, not an id. */
  query: string | undefined;
  extensions: Record<string, unknown>;
  /**
   * The values of its `documentId` and `doc_id` parameters, in the body or the URL, and a null for
   * any naming svc-cache does not read (src/graphql/requestParameters.ts, GraphQLOperation).
   */
  documentIds: readonly (string | null)[];
}

/**
 * The one id a request names a stored document by (README, Stored documents sent by id); undefined
 * when it names none svc-cache reads, and the request is then one svc-cache cannot see. A request
 * names a document when it sends no query text and one id, in any of the forms origins read:
 * `documentId` (GraphQL over HTTP's persisted documents: Hive Gateway, GraphQL Code Generator's
 * clients), Relay's `doc_id`, or the `persistedQuery` extension's `sha256Hash` (Apollo's persisted
 * queries, Yoga's default). The same id in several forms is one id. Not read: two different ids,
 * since origins differ on which they take, nor a `persistedQuery` of another shape, which some take
 * an id from whatever its version says (Apollo Router) or under another member (Hot Chocolate).
 */
export function namedDocumentId(reference: DocumentReference): string | undefined {
  if (reference.query !== undefined) return undefined;
  const ids = new Set(reference.documentIds);
  const persistedQuery = reference.extensions.persistedQuery;
  if (persistedQuery !== undefined && persistedQuery !== null) ids.add(persistedQueryHash(persistedQuery));
  if (ids.size !== 1) return undefined;
  const [id] = ids;
  return id ?? undefined;
}

/**
 * The hash of an Apollo persisted-query reference, exactly `{"version":1,"sha256Hash":…}`; null for
 * any other shape, another member included (Hot Chocolate reads `md5Hash` and the like).
 */
function persistedQueryHash(reference: unknown): string | null {
  if (typeof reference !== 'object' || reference === null || Object.keys(reference).length !== 2) return null;
  const { version, sha256Hash } = reference as Record<string, unknown>;
  return version === 1 && typeof sha256Hash === 'string' ? sha256Hash : null;
}
