import { OperationTypeNode, type DocumentNode, type GraphQLSchema } from 'graphql';
import type { Config } from '../config/index.js';
import { parseDocument } from '../graphql/index.js';
import { prepareOperation, type KeyFields } from '../invalidation/index.js';
import { analyseDocument, checkLimits, isVerdict, storedDocument } from './requestStages.js';

/**
 * What `check` prints of the manifest's documents that svc-cache will not cache or read (README,
 * Stored documents sent by id), so that an operator finds them before clients send them: each kind
 * in one line, naming a few ids. Not logged by `serve`: parsing and preparing every document takes
 * seconds for a manifest of thousands, which would hold up requests at each reload.
 */
export function storedDocumentWarnings(config: Config, schema: GraphQLSchema | undefined): string[] {
  const documents = config.persistedDocuments?.documents;
  if (documents === undefined) return [];
  const found: Record<Finding, string[]> = { 'does-not-parse': [], 'over-limits': [], 'typename-missing': [], 'keys-missing': [] };
  for (const [id, text] of documents) {
    const finding = findingOf(text, config, schema);
    if (finding !== undefined) found[finding].push(id);
  }
  return (Object.keys(found) as Finding[]).filter((finding) => found[finding].length > 0).map((finding) => warningText(finding, found[finding]));
}

type Finding = 'does-not-parse' | 'over-limits' | 'typename-missing' | 'keys-missing';

/** Ids named in a warning; the rest are counted. */
const NAMED_IDS = 5;

/**
 * What the engine would make of each operation of the document (checkLimits, as for a request
 * naming it): the first finding of any.
 */
function findingOf(text: string, config: Config, schema: GraphQLSchema | undefined): Finding | undefined {
  const parsed = parseDocument(text);
  const names = 'kind' in parsed || parsed.operations.length === 1 ? [undefined] : parsed.operations.map((operation) => operation.name?.value);
  for (const name of names) {
    const checked = checkLimits(storedDocument(text), config.limits, name, (document) => analyseDocument(document, config, schema));
    if (isVerdict(checked)) {
      if (checked.kind === 'pass' && checked.reason === 'syntax-error') return 'does-not-parse';
      if (checked.kind === 'pass' && checked.reason === 'stored-document-over-limits') return 'over-limits';
      continue;
    }
    const isQuery = checked.selected.operation.operation === OperationTypeNode.QUERY;
    if (schema === undefined || !isQuery || checked.analysis.policy === undefined) continue;
    if (needsAddedFields(checked.selected.document, NO_KEY_FIELDS, schema)) return 'typename-missing';
    if (needsAddedFields(checked.selected.document, config.keyFields, schema)) return 'keys-missing';
  }
  return undefined;
}

/**
 * Whether svc-cache would add fields to tag the query's answers: a stored document goes without
 * them. With no key fields, what it would add is `__typename` where a field can return several types.
 */
function needsAddedFields(document: DocumentNode, keyFields: KeyFields, schema: GraphQLSchema): boolean {
  try {
    return prepareOperation(schema, document, keyFields).rewritten;
  } catch {
    // A document the schema does not have: the origin answers it with errors, which are never stored.
    return false;
  }
}

const NO_KEY_FIELDS: KeyFields = { defaults: [], types: {} };

function warningText(finding: Finding, ids: readonly string[]): string {
  const named = ids.slice(0, NAMED_IDS).map((id) => JSON.stringify(id));
  const list = ids.length > NAMED_IDS ? `${named.join(', ')} and ${ids.length - NAMED_IDS} more` : named.join(', ');
  switch (finding) {
    case 'does-not-parse':
      return `persistedDocuments: ${ids.length} of the manifest's documents do not parse (${list}): a request naming one passes as an operation svc-cache cannot see, and a POST empties the store when the origin runs it`;
    case 'over-limits':
      return `persistedDocuments: ${ids.length} of the manifest's documents are over limits (${list}): a request naming one passes as an operation svc-cache cannot see, and a POST empties the store when the origin runs it; raise limits to cover them`;
    case 'typename-missing':
      return `persistedDocuments: ${ids.length} of the manifest's queries select no __typename where a field can return several types (${list}): svc-cache adds no field to a stored document, so their answers are never stored`;
    case 'keys-missing':
      return `persistedDocuments: ${ids.length} of the manifest's queries select objects without their key fields (${list}): svc-cache adds no field to a stored document, so a mutation or purge of any object of those types drops their answers`;
  }
}
