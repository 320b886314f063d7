import { OperationTypeNode, type DocumentNode, type GraphQLSchema } from 'graphql';
import type { Config } from '../config/index.js';
import { parseDocument, validationErrors } from '../graphql/index.js';
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
  if (documents.size === 0) return [EMPTY_MANIFEST];
  const found: Record<Finding, string[]> = { 'does-not-parse': [], 'over-limits': [], 'not-in-schema': [], 'typename-missing': [], 'keys-missing': [] };
  for (const [id, text] of documents) {
    const finding = findingOf(text, config, schema);
    if (finding !== undefined) found[finding.kind].push(described(id, text, finding.detail));
  }
  return (Object.keys(found) as Finding[]).filter((finding) => found[finding].length > 0).map((finding) => warningText(finding, found[finding]));
}

type Finding = 'does-not-parse' | 'over-limits' | 'not-in-schema' | 'typename-missing' | 'keys-missing';

const EMPTY_MANIFEST =
  "persistedDocuments: the manifest holds no documents: every id a client sends passes as an operation svc-cache cannot see (unknown-document-id), and a POST empties the store when the origin runs it";

/** Ids named in a warning; the rest are counted. */
const NAMED_IDS = 5;

/**
 * How a warning names a document: its id, with the name of its first operation when the id is not
 * that name (Apollo's and Relay's ids are hashes), and what the finding says of it (which limit).
 */
function described(id: string, text: string, detail: string | undefined): string {
  const parsed = parseDocument(text);
  const name = 'kind' in parsed ? undefined : parsed.operations[0]?.name?.value;
  const notes = [name !== undefined && name !== id ? name : undefined, detail].filter((note) => note !== undefined);
  return notes.length === 0 ? JSON.stringify(id) : `${JSON.stringify(id)} (${notes.join(': ')})`;
}

/**
 * What the engine would make of each operation of the document (checkLimits, as for a request
 * naming it): the first finding of any, with the limit's message for one over the limits.
 */
function findingOf(text: string, config: Config, schema: GraphQLSchema | undefined): { kind: Finding; detail?: string } | undefined {
  const parsed = parseDocument(text);
  const names = 'kind' in parsed || parsed.operations.length === 1 ? [undefined] : parsed.operations.map((operation) => operation.name?.value);
  for (const name of names) {
    const checked = checkLimits(storedDocument(text), config.limits, name, (document) => analyseDocument(document, config, schema));
    if (isVerdict(checked)) {
      if (checked.kind === 'pass' && checked.reason === 'syntax-error') return { kind: 'does-not-parse' };
      if (checked.kind === 'pass' && checked.reason === 'stored-document-over-limits') return { kind: 'over-limits', detail: checked.detail };
      continue;
    }
    if (schema === undefined) continue;
    // Only `check` validates: requests go on unvalidated, so that this is not the cost of every new document.
    const invalid = validationErrors(schema, checked.selected.document)[0];
    if (invalid !== undefined) return { kind: 'not-in-schema', detail: invalid.message };
    const isQuery = checked.selected.operation.operation === OperationTypeNode.QUERY;
    if (!isQuery || checked.analysis.policy === undefined) continue;
    if (lacksTypename(checked.selected.document, schema)) return { kind: 'typename-missing' };
    if (needsAddedFields(checked.selected.document, config.keyFields, schema)) return { kind: 'keys-missing' };
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

/** Whether a field that can return several types is selected without `__typename`: what svc-cache adds when no type has a key. */
function lacksTypename(document: DocumentNode, schema: GraphQLSchema): boolean {
  return needsAddedFields(document, NO_KEY_FIELDS, schema);
}

const NO_KEY_FIELDS: KeyFields = { defaults: [], types: {} };

function warningText(finding: Finding, documents: readonly string[]): string {
  const named = documents.slice(0, NAMED_IDS).join(', ');
  const list = documents.length > NAMED_IDS ? `${named} and ${documents.length - NAMED_IDS} more` : named;
  const { one, many, so } = FINDINGS[finding];
  const counted = documents.length === 1 ? `1 manifest document ${one}` : `${documents.length} manifest documents ${many}`;
  return `persistedDocuments: ${counted}: ${list}. ${so}`;
}

/** What each finding says of one document and of several, and what follows from it. */
const FINDINGS: Record<Finding, { one: string; many: string; so: string }> = {
  'does-not-parse': {
    one: 'does not parse',
    many: 'do not parse',
    so: 'A request naming one passes as an operation svc-cache cannot see, and a POST empties the store when the origin runs it.',
  },
  'over-limits': {
    one: 'is over limits',
    many: 'are over limits',
    so: 'A request naming one passes as an operation svc-cache cannot see, and a POST empties the store when the origin runs it; raise limits to cover them.',
  },
  'not-in-schema': {
    one: 'does not validate against the schema',
    many: 'do not validate against the schema',
    so: "svc-cache stores no answer to such a document that holds an entity without its key or objects where its schema has none, and such a mutation's answer empties every type queries hold; load the origin's schema, or mend the document.",
  },
  'typename-missing': {
    one: 'selects no __typename where a field can return several types',
    many: 'select no __typename where a field can return several types',
    so: 'svc-cache adds no field to a stored document, so the answers to such a document are never stored.',
  },
  'keys-missing': {
    one: 'selects objects without their key fields',
    many: 'select objects without their key fields',
    so: 'svc-cache adds no field to a stored document, so a mutation or purge of any object of those types drops the answers to such a document.',
  },
};
