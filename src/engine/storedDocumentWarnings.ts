import { OperationTypeNode, type DocumentNode, type GraphQLSchema } from 'graphql';
import type { Config } from '../config/index.js';
import { operationViolation, parseDocument, queryTextViolation, selectionOf, selectOperation } from '../graphql/index.js';
import { listArgumentIndex, prepareOperation } from '../invalidation/index.js';
import { cachePolicyFor } from './rules.js';

/**
 * What `check` prints of the manifest's documents that svc-cache will not cache or read (README,
 * Stored documents sent by id), so that an operator finds them before clients send them: each kind
 * in one line, naming a few ids. Not logged by `serve`: parsing and preparing every document takes
 * seconds for a manifest of thousands, which would hold up requests at each reload.
 */
export function storedDocumentWarnings(config: Config, schema: GraphQLSchema | undefined): string[] {
  const documents = config.persistedDocuments?.documents;
  if (documents === undefined) return [];
  const found: Record<Finding, string[]> = { 'does-not-parse': [], 'over-limits': [], 'keys-missing': [] };
  for (const [id, text] of documents) {
    const finding = findingOf(text, config, schema);
    if (finding !== undefined) found[finding].push(id);
  }
  return (Object.keys(found) as Finding[]).filter((finding) => found[finding].length > 0).map((finding) => warningText(finding, found[finding]));
}

type Finding = 'does-not-parse' | 'over-limits' | 'keys-missing';

/** Ids named in a warning; the rest are counted. */
const NAMED_IDS = 5;

function findingOf(text: string, config: Config, schema: GraphQLSchema | undefined): Finding | undefined {
  if (queryTextViolation(text, config.limits)) return 'over-limits';
  const parsed = parseDocument(text);
  if ('kind' in parsed) return 'does-not-parse';
  for (const operation of parsed.operations) {
    const selected = selectOperation(parsed, parsed.operations.length === 1 ? undefined : operation.name?.value);
    if (selected.kind !== 'operation') continue;
    if (operationViolation(selected.document, config.limits)) return 'over-limits';
    if (schema !== undefined && operation.operation === OperationTypeNode.QUERY && cachedUnlessKeysMissing(selected.document, config, schema)) return 'keys-missing';
  }
  return undefined;
}

/**
 * Whether a rule caches the query but svc-cache would add fields to tag its answers: a stored
 * document goes without them.
 */
function cachedUnlessKeysMissing(document: DocumentNode, config: Config, schema: GraphQLSchema): boolean {
  try {
    if (cachePolicyFor(config.rules, selectionOf(schema, document)) === undefined) return false;
    return prepareOperation(schema, document, config.keyFields, listArgumentIndex(schema, config.listArguments, config.keyFields)).rewritten;
  } catch {
    // A document the schema does not have: the origin answers it with errors, which are never stored.
    return false;
  }
}

function warningText(finding: Finding, ids: readonly string[]): string {
  const named = ids.slice(0, NAMED_IDS).map((id) => JSON.stringify(id));
  const list = ids.length > NAMED_IDS ? `${named.join(', ')} and ${ids.length - NAMED_IDS} more` : named.join(', ');
  switch (finding) {
    case 'does-not-parse':
      return `persistedDocuments: ${ids.length} of the manifest's documents do not parse (${list}): a request naming one passes as an operation svc-cache cannot see, and a POST empties the store when the origin runs it`;
    case 'over-limits':
      return `persistedDocuments: ${ids.length} of the manifest's documents are over limits (${list}): a request naming one passes as an operation svc-cache cannot see, and a POST empties the store when the origin runs it; raise limits to cover them`;
    case 'keys-missing':
      return `persistedDocuments: ${ids.length} of the manifest's queries select objects without their key fields, or without __typename where a field can return several types (${list}): svc-cache adds no field to a stored document, so their answers are never stored`;
  }
}
