import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import {
  GraphQLError,
  Kind,
  parse,
  print,
  type DocumentNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { bracketNesting } from './brackets.js';
import { fragmentsOf, fragmentsUsedBy } from './fragments.js';

/**
 * A query document parsed once and remembered by its exact text: popular queries arrive with the
 * same text again and again, and parsing and printing dominate the cost of deciding a request.
 */
export interface ParsedDocument {
  document: DocumentNode;
  operations: readonly OperationDefinitionNode[];
  /**
   * The most selection sets nested in one another anywhere in it, fields and inline fragments
   * alike: printing it (the normalised text, the query with key fields added) indents each line
   * that deep, so its printed size is its size times this (README, Bad input).
   */
  nesting: number;
  /** How deep brackets nest in its text (bracketNesting): a HIT's query is not scanned again. */
  brackets: number;
}

export type SelectedOperation =
  | {
      kind: 'operation';
      operation: OperationDefinitionNode;
      /** The operation's name, or '' for an anonymous one. */
      name: string;
      /**
       * The SHA-256 (base64url) of the whole document printed: the normalised form the cache key
       * holds. Its digest rather than its text: a HIT hashes its key, and the text of a large
       * document made every HIT of it hash that much (README, Cache key).
       */
      normalised: string;
      /** The operation chosen with the fragments it uses, as a document (for rule matching against the schema). */
      document: DocumentNode;
      /** Whether that document is the whole one the client sent: no other operation beside it. */
      wholeDocument: boolean;
    }
  | { kind: 'invalid'; reason: string };

export function parseDocument(query: string): ParsedDocument | { kind: 'syntax-error'; message: string } {
  const remembered = parsedByText.get(query);
  if (remembered) return remembered;
  let document: DocumentNode;
  try {
    document = parse(query, { noLocation: true });
  } catch (error) {
    return { kind: 'syntax-error', message: error instanceof GraphQLError ? error.message : String(error) };
  }
  const operations = document.definitions.filter(
    (definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION,
  );
  const parsed: ParsedDocument = { document, operations, nesting: selectionNesting(document), brackets: bracketNesting(query) };
  parsedByText.set(query, parsed, { size: retainedBytesOf(document, query) });
  textOfDocument.set(parsed, query);
  return parsed;
}

/**
 * How deep brackets nest in `text`: as its parse found when it was parsed before (a HIT's query),
 * else scanned (bracketNesting), since parsing a text nested deeper than graphql-js's parser can
 * recurse overflows the stack.
 */
export function bracketNestingOf(text: string): number {
  return parsedByText.peek(text)?.brackets ?? bracketNesting(text);
}

/** Picks the operation to run as GraphQL's "GetOperation" does, and the digest of its normalised text. */
export function selectOperation(parsed: ParsedDocument, operationName: string | undefined): SelectedOperation {
  const { operations } = parsed;
  let operation: OperationDefinitionNode | undefined;
  if (operationName === undefined) {
    if (operations.length !== 1) {
      return { kind: 'invalid', reason: operations.length === 0 ? 'no operation' : 'several operations and no operationName' };
    }
    operation = operations[0];
  } else {
    operation = operations.find((candidate) => candidate.name?.value === operationName);
    if (!operation) return { kind: 'invalid', reason: `no operation named "${operationName}"` };
  }
  const name = operation!.name?.value ?? '';
  let byName = separatedByDocument.get(parsed);
  if (!byName) {
    byName = new Map();
    separatedByDocument.set(parsed, byName);
  }
  let document = byName.get(name);
  if (!document) {
    document = operations.length === 1 ? parsed.document : separatedOperation(parsed.document, operation!);
    byName.set(name, document);
    if (byName.size > 1) chargeForOperation(parsed, document);
  }
  // The whole document, not the operation alone: an origin validates every operation and fragment
  // in it, and answers errors for a document whose other operation is invalid (README, Cache key).
  return new Selected(parsed, operation!, name, document);
}

/**
 * An operation selected, whose normalised digest is printed only when asked for: after the limits,
 * which stop a document that nests too deep to print (README, Bad input). A class, so that the
 * getter is its prototype's and not a closure made per request.
 */
class Selected {
  readonly kind = 'operation';
  readonly wholeDocument: boolean;

  constructor(
    private readonly parsed: ParsedDocument,
    readonly operation: OperationDefinitionNode,
    readonly name: string,
    readonly document: DocumentNode,
  ) {
    this.wholeDocument = parsed.operations.length === 1;
  }

  get normalised(): string {
    return normalisedDigest(this.parsed);
  }
}

/**
 * Documents are remembered by what they keep in the heap, not by their length: a dense query
 * (`{ a a a … }`) parses to about 90 bytes of nodes per character, a typical one to about 40, and a
 * memo charged 4 bytes per character let 2.5 MB of distinct dense queries exhaust the heap.
 */
const parsedByText = new LRUCache<string, ParsedDocument>({
  max: 10_000,
  maxSize: 64 * 1024 * 1024,
});

/**
 * An upper bound of the heap a remembered document keeps, in bytes, from the parser's count of its
 * lexical tokens (each becomes at most a node or two): measured at 50-185 bytes of nodes a token,
 * fields being the most, twice over for what is derived from the document and kept as long as it
 * is (the operation prepared for tagging, with its added key fields and its printed text).
 */
function retainedBytesOf(document: DocumentNode, text: string): number {
  return DERIVED_COPIES * NODE_BYTES_PER_TOKEN * (document.tokenCount ?? text.length) + 2 * text.length;
}

const NODE_BYTES_PER_TOKEN = 192;
const DERIVED_COPIES = 2;

/** The text each remembered document was parsed from, to charge it again in parsedByText. */
const textOfDocument = new WeakMap<ParsedDocument, string>();
/** What each remembered document is charged beyond its own parse, and the selections it holds in all. */
const chargedByDocument = new WeakMap<ParsedDocument, { extraBytes: number; selections: number }>();

/**
 * What is derived from an operation selected by name (its document, its analysis, its copy prepared
 * for tagging, the plan its answers are read with) is kept as long as its parsed document is. A
 * document of many operations, each named in a request of its own, would keep all of them while
 * charged once (500 operations over a chain of 500 fragments kept 171 MiB charged as 3): each
 * operation named after the first charges the memo its share of the document (the selections of
 * the operation and its fragments against the document's), so that such a document leaves the memo,
 * and its derived state the heap, once it outweighs the bound.
 */
function chargeForOperation(parsed: ParsedDocument, separated: DocumentNode): void {
  const text = textOfDocument.get(parsed);
  if (text === undefined || parsedByText.peek(text) !== parsed) return;
  let charged = chargedByDocument.get(parsed);
  if (!charged) {
    charged = { extraBytes: 0, selections: Math.max(1, selectionCount(parsed.document)) };
    chargedByDocument.set(parsed, charged);
  }
  const base = retainedBytesOf(parsed.document, text);
  charged.extraBytes += Math.ceil((base * selectionCount(separated)) / charged.selections);
  parsedByText.set(text, parsed, { size: base + charged.extraBytes });
}

/** ParsedDocument.nesting, walked with a stack of its own: inline fragments nest thousands deep. */
function selectionNesting(document: DocumentNode): number {
  let deepest = 0;
  const pending: Array<[SelectionSetNode, number]> = [];
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION || definition.kind === Kind.FRAGMENT_DEFINITION) pending.push([definition.selectionSet, 1]);
  }
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [selectionSet, level] = next;
    deepest = Math.max(deepest, level);
    for (const selection of selectionSet.selections) {
      if (selection.kind !== Kind.FRAGMENT_SPREAD && selection.selectionSet) pending.push([selection.selectionSet, level + 1]);
    }
  }
  return deepest;
}

/** Fields, spreads and inline fragments in the document's definitions, walked with a stack of its own. */
function selectionCount(document: DocumentNode): number {
  let count = 0;
  const pending: SelectionSetNode[] = [];
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION || definition.kind === Kind.FRAGMENT_DEFINITION) pending.push(definition.selectionSet);
  }
  for (let selectionSet = pending.pop(); selectionSet !== undefined; selectionSet = pending.pop()) {
    count += selectionSet.selections.length;
    for (const selection of selectionSet.selections) {
      if (selection.kind !== Kind.FRAGMENT_SPREAD && selection.selectionSet) pending.push(selection.selectionSet);
    }
  }
  return count;
}

const separatedByDocument = new WeakMap<ParsedDocument, Map<string, DocumentNode>>();
const digestByDocument = new WeakMap<ParsedDocument, string>();

/** Printed once per parsed document, and only its digest kept: the printed text may be many times the sent one. */
function normalisedDigest(parsed: ParsedDocument): string {
  let digest = digestByDocument.get(parsed);
  if (digest === undefined) {
    digest = hash('sha256', print(parsed.document), 'base64url');
    digestByDocument.set(parsed, digest);
  }
  return digest;
}

/** The operation and the fragments it uses, in document order, as graphql's `separateOperations` keeps them. */
function separatedOperation(document: DocumentNode, operation: OperationDefinitionNode): DocumentNode {
  const used = fragmentsUsedBy(operation, fragmentsOf(document));
  const definitions = document.definitions.filter(
    (definition) => definition === operation || (definition.kind === Kind.FRAGMENT_DEFINITION && used.has(definition.name.value)),
  );
  return { kind: Kind.DOCUMENT, definitions };
}
