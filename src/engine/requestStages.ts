import { BREAK, Kind, OperationTypeNode, visit, type ASTNode, type DirectiveNode, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode, type SelectionSetNode } from 'graphql';
import { resolvePersistedQuery, type PersistedQueryRefusal, type PersistedQueryRegistration, type PersistedQueryWarnings } from '../apq/index.js';
import type { Config } from '../config/index.js';
import { parseDocument, selectOperation, variablesKeyText, type ParsedDocument } from '../graphql/index.js';
import type { GraphQLParams } from '../graphql/index.js';
import { operationsViolation, operationViolation, queryTextViolation, selectionNestingLimit, selectionOf, type LimitViolation } from '../graphql/index.js';
import { ambiguousRequestResponse, possibleOperations, readGetRequest, readPostRequest, type RequestParameters } from '../graphql/index.js';
import { acceptsNoJson, ownAnswerMediaType } from '../http/index.js';
import { headerValue, type HeaderList } from '../http/index.js';
import { graphQLErrorResponse, type HttpResponse, type OwnErrorCode } from '../http/index.js';
import { carriesPurgeToken, looksLikePurge } from '../purge/index.js';
import type { PersistedQueryRegistry } from '../apq/index.js';
import { namedDocumentId, type PersistedDocuments } from '../persistedDocuments/index.js';
import { isFresh, type CacheStore, type CachedResponse, type InvalidationMark } from '../store/index.js';
import { errorMessage } from '../util/index.js';
import { cacheKey, taggingPart, type KeyedTarget } from './cacheKey.js';
import type { Leadership, MissCoalescer } from './coalescing.js';
import type { Explanation, RequestHead } from './exchange.js';
import type { PassReason } from './passReason.js';
import { cachePolicyFor, selectsUnnamedIntrospection, type CachePolicy } from './rules.js';
import { ambiguousScopeSource, scopeBucketKey, scopeVaryHeaders, sharedBucketDespite } from './scopes.js';

/**
 * The stages a GraphQL request goes through, in order: read parameters -> resolve a stored document or APQ -> check
 * limits -> classify -> scope and key -> lookup/coalesce. Each either hands its result to the
 * next or ends the decision early with a `Verdict` (docs/graphql-caching.md, Cacheability).
 */

/** A decision made before the last stage: answer now, or pass the request on to the origin. */
export type Verdict =
  | { kind: 'respond'; response: HttpResponse; outcome: 'ERROR'; errorCode: OwnErrorCode }
  | { kind: 'respond'; response: HttpResponse; outcome: 'PASS'; passReason: 'purge' }
  | { kind: 'pass'; reason: PassReason; detail?: string };

export function isVerdict(value: object): value is Verdict {
  return 'kind' in value && (value.kind === 'respond' || value.kind === 'pass');
}

export function passVerdict(reason: PassReason, detail?: string): Verdict {
  return detail === undefined ? { kind: 'pass', reason } : { kind: 'pass', reason, detail };
}

export function ownError(code: OwnErrorCode, status: number, message: string, headers: Array<[string, string]> = []): Verdict {
  return { kind: 'respond', outcome: 'ERROR', errorCode: code, response: graphQLErrorResponse(status, message, code, headers) };
}

// Stage 1: read parameters.

/**
 * The GraphQL over HTTP parameters of a GET (from its path) or a POST (from its body and its URL),
 * read as the origin would run them (src/graphql/requestParameters.ts).
 */
export function readParameters(head: RequestHead, body: Buffer): RequestParameters {
  return head.method === 'GET' ? readGetRequest(head.path) : readPostRequest(head.path, head.headers, body);
}

/** Sent query text over the limit is refused before APQ, so it is never registered either. */
export function checkSentQueryText(params: GraphQLParams, limits: Config['limits']): Verdict | undefined {
  const violation = params.query === undefined ? undefined : queryTextViolation(params.query, limits);
  return violation && limitExceeded(violation);
}

// Stage 2: resolve a stored document's id or APQ (README, Stored documents sent by id; docs/graphql-caching.md, Persisted queries).

export interface ResolvedQuery {
  /** The query text to decide on, undefined when the request carries none. */
  query: string | undefined;
  /** The request named a persisted query (its reference is for svc-cache, not the origin). */
  persisted: boolean;
  /**
   * The request named one of the origin's stored documents by its id, and the text is the
   * manifest's: the origin gets the request as sent, never the text (it may run ids only).
   */
  storedById: boolean;
  /**
   * The request sent no text but may name a stored document that svc-cache does not resolve; it goes
   * on as one svc-cache cannot see. `unknown`: by an id the manifest does not hold (clients deployed
   * before it reached svc-cache), not refused as an unknown APQ hash. `unread`: in a way svc-cache
   * reads no id from (no manifest, two different ids, a value that is no string, another member or
   * URL parameter an origin may take one from).
   */
  unresolvedDocumentId?: 'unknown' | 'unread';
  /** The hash came alone and the text from the registry. */
  fromRegistry: boolean;
  /** The hash and text to register once the origin answered the query with data (README, Automatic persisted queries). */
  registration: PersistedQueryRegistration | undefined;
}

export type ApqResult = ResolvedQuery | { kind: 'refused'; verdict: Verdict; refusal: PersistedQueryRefusal };

/**
 * The query text a request runs: an id the origin's manifest holds names its document (whatever APQ
 * would say of it, since the origin reads the id, not svc-cache's registry), else APQ resolves it.
 * A request without a persisted-query reference (most of them) resolves at once, without a promise:
 * a HIT's decision then waits on nothing but the store.
 */
export function resolveQuery(params: GraphQLParams, documentIds: readonly (string | null)[], deps: ResolutionDependencies): ApqResult | Promise<ApqResult> {
  // An empty manifest is one all the same: every id goes on to the origin, which may know it.
  const id = deps.documents === undefined ? undefined : namedDocumentId({ query: params.query, extensions: params.extensions, documentIds });
  const stored = id === undefined ? undefined : deps.documents!.get(id);
  if (stored !== undefined) return storedDocument(stored);
  const { persistedQuery } = params.extensions;
  if (persistedQuery === undefined || persistedQuery === null) {
    if (id !== undefined) return UNKNOWN_DOCUMENT_ID;
    return params.query === undefined && documentIds.length > 0 ? UNREAD_DOCUMENT_ID : asSent(params.query);
  }
  const resolving = resolveReference(params, deps);
  if (deps.documents === undefined || params.query !== undefined) return resolving;
  // A hash neither the manifest nor the registry knows may be one the origin's newer manifest does,
  // and a reference beside other members one the origin reads its own way.
  const unresolved = id === undefined ? UNREAD_DOCUMENT_ID : UNKNOWN_DOCUMENT_ID;
  return resolving.then((resolved) => ('kind' in resolved && UNKNOWN_TO_APQ.has(resolved.refusal) ? unresolved : resolved));
}

/** The manifest's text of a stored document a request named by its id. */
export function storedDocument(text: string): ResolvedQuery {
  return { ...asSent(text), storedById: true };
}

/** The text a request sent, or none, to decide on as it came. */
function asSent(query: string | undefined): ResolvedQuery {
  return { query, persisted: false, storedById: false, fromRegistry: false, registration: undefined };
}

const UNKNOWN_DOCUMENT_ID: ResolvedQuery = { ...asSent(undefined), unresolvedDocumentId: 'unknown' };
const UNREAD_DOCUMENT_ID: ResolvedQuery = { ...asSent(undefined), unresolvedDocumentId: 'unread' };
/** APQ's refusals of a hash it does not know, of an id that is no SHA-256 (Apollo's manifests allow custom ids), or of any hash when it is off. */
const UNKNOWN_TO_APQ: ReadonlySet<PersistedQueryRefusal> = new Set(['not-found', 'bad-hash', 'not-supported']);

/**
 * The answer to a batch one of whose operations svc-cache refuses: the refusal once for each of its
 * `count` operations, so that a client reads it as it reads an answer to the batch (Apollo's
 * persisted-query link then sends each operation again with its text).
 */
export function refusedForEach(verdict: Verdict, count: number): Verdict {
  if (verdict.kind !== 'respond') return verdict;
  const refusal = verdict.response.body.toString('utf8');
  return { ...verdict, response: { ...verdict.response, body: Buffer.from(`[${Array.from({ length: count }, () => refusal).join(',')}]`) } };
}

type ApqDependencies = { apq: Config['apq']; registry: PersistedQueryRegistry; warnings: PersistedQueryWarnings };
export type ResolutionDependencies = ApqDependencies & { documents: PersistedDocuments | undefined };

async function resolveReference(params: GraphQLParams, deps: ApqDependencies): Promise<ApqResult> {
  const persisted = await resolvePersistedQuery(params.query, params.extensions, deps);
  if (persisted.kind === 'refused') {
    const errorCode = PERSISTED_QUERY_CODES[persisted.reason] ?? 'BAD_REQUEST';
    return { kind: 'refused', refusal: persisted.reason, verdict: { kind: 'respond', outcome: 'ERROR', errorCode, response: persisted.response } };
  }
  if (persisted.kind === 'none') return asSent(params.query);
  return { query: persisted.query, persisted: true, storedById: false, fromRegistry: params.query === undefined, registration: persisted.registration };
}

const PERSISTED_QUERY_CODES: Partial<Record<PersistedQueryRefusal, OwnErrorCode>> = {
  'not-found': 'PERSISTED_QUERY_NOT_FOUND',
  'not-supported': 'PERSISTED_QUERY_NOT_SUPPORTED',
};

// Stage 3: check limits (docs/graphql-caching.md, Limits).

/** What a document's text alone decides, worked out once per document, config and schema. */
export interface DocumentAnalysis {
  config: Config;
  schema: GraphQLSchema | undefined;
  violation: LimitViolation | undefined;
  /** Undefined without a schema, or when no rule matches. */
  policy: CachePolicy | undefined;
  /** The document uses `@defer` or `@stream`: its answer streams. */
  streams: boolean;
  /** It selects introspection (`__schema`, `__type`) that no rule names: not cached. */
  unnamedIntrospection: boolean;
  /** It selects within a field the schema gives no object type, whose type no rule can be matched to: not cached. */
  untypedSelection: boolean;
}

/**
 * What a document's text alone decides. The limits come first: a document over them is read no
 * further, so every later walk of its selections goes at most `limits.maxDepth` fields deep
 * (README, Bad input).
 */
export function analyseDocument(document: DocumentNode, config: Config, schema: GraphQLSchema | undefined): DocumentAnalysis {
  const violation = operationViolation(document, config.limits);
  const selection = !violation && schema ? selectionOf(schema, document) : undefined;
  return {
    config,
    schema,
    violation,
    policy: selection && cachePolicyFor(config.rules, selection),
    streams: !violation && usesIncrementalDelivery(document),
    unnamedIntrospection: selection !== undefined && selectsUnnamedIntrospection(config.rules, selection),
    untypedSelection: selection?.untypedSelection === true,
  };
}

/**
 * Whether a document asks for an incremental (streamed) answer anywhere in it: `@defer` or
 * `@stream` on any node. Operations and fragments are read directly, which took a new document's
 * check from 3.4 to 0.3 µs against graphql's `visit` (docs/performance.md, What a MISS adds); any
 * other definition (type-system ones, which no origin runs) is visited.
 */
export function usesIncrementalDelivery(document: DocumentNode): boolean {
  return document.definitions.some((definition) => {
    switch (definition.kind) {
      case Kind.OPERATION_DEFINITION:
      case Kind.FRAGMENT_DEFINITION:
        return (
          hasIncrementalDirective(definition.directives) ||
          (definition.variableDefinitions ?? []).some((variable) => hasIncrementalDirective(variable.directives)) ||
          selectsIncrementally(definition.selectionSet)
        );
      default:
        return visitedIncrementally(definition);
    }
  });
}

function selectsIncrementally(selectionSet: SelectionSetNode | undefined): boolean {
  return (
    selectionSet !== undefined &&
    selectionSet.selections.some(
      (selection) => hasIncrementalDirective(selection.directives) || (selection.kind !== Kind.FRAGMENT_SPREAD && selectsIncrementally(selection.selectionSet)),
    )
  );
}

function hasIncrementalDirective(directives: readonly DirectiveNode[] | undefined): boolean {
  return directives !== undefined && directives.some(isIncrementalDirective);
}

function isIncrementalDirective(directive: DirectiveNode): boolean {
  return directive.name.value === 'defer' || directive.name.value === 'stream';
}

function visitedIncrementally(node: ASTNode): boolean {
  let found = false;
  visit(node, {
    Directive(directive) {
      if (!isIncrementalDirective(directive)) return undefined;
      found = true;
      return BREAK;
    },
  });
  return found;
}

/** The pass reason of a request without text that may name a stored document svc-cache does not resolve. */
const UNRESOLVED_REASONS = { unknown: 'unknown-document-id', unread: 'unread-document-id' } as const satisfies Record<string, PassReason>;

export type SelectedOperation = Extract<ReturnType<typeof selectOperation>, { kind: 'operation' }>;

export interface CheckedOperation {
  selected: SelectedOperation;
  analysis: DocumentAnalysis;
}

/** Parses and selects the operation, and refuses one over the configured limits. */
export function checkLimits(
  resolved: ResolvedQuery,
  limits: Config['limits'],
  operationName: string | undefined,
  analyse: (document: DocumentNode) => DocumentAnalysis,
): Verdict | CheckedOperation {
  const { query } = resolved;
  if (query === undefined) return passVerdict(resolved.unresolvedDocumentId === undefined ? 'no-query' : UNRESOLVED_REASONS[resolved.unresolvedDocumentId]);
  // A query registered under a larger limit before a reload lowered it, or a stored document.
  const textTooLarge = resolved.fromRegistry || resolved.storedById ? queryTextViolation(query, limits) : undefined;
  if (textTooLarge) return overLimits(resolved, textTooLarge);
  const parsed = parseDocument(query);
  if ('kind' in parsed) return passVerdict('syntax-error', parsed.message);
  // Before anything prints it: the printed size grows as its size times its nesting.
  const tooNested = nestingViolation(parsed.nesting, limits);
  if (tooNested) return overLimits(resolved, tooNested);
  const selected = operationToRun(parsed, operationName);
  if (selected.kind === 'invalid') return passVerdict('unknown-operation', selected.reason);
  const analysis = analyse(selected.document);
  if (analysis.violation) return overLimits(resolved, analysis.violation);
  return { selected, analysis };
}

/**
 * Selection sets nested deeper than twice one more than `limits.maxDepth` (never fewer than 32), fields and
 * inline fragments alike, are over the depth limit too (README, Bad input): a query as deep as the
 * limit with an inline fragment at each level stays within it. Inline fragments nested within
 * one another add no depth, and graphql-js parses them a few thousand deep; printing such a document
 * (its normalised text, the query sent with key fields) took 116 ms and 7 MB for 15 KB of them.
 */
function nestingViolation(nesting: number, limits: Config['limits']): LimitViolation | undefined {
  const most = selectionNestingLimit(limits.maxDepth);
  if (nesting <= most) return undefined;
  return { code: 'QUERY_TOO_DEEP', message: `Query nests selection sets ${nesting} deep, inline fragments included; the limit is ${most}` };
}

/**
 * Whether a stored document the limits stopped (`stored-document-over-limits`) holds a mutation the
 * origin may run: over GET it is refused as one within them is (classify). The manifest's text is
 * the operator's, so parsing it whatever its size is bounded by the manifest; it is not printed,
 * since its nesting may be what stopped it.
 */
export function isStoredMutation(verdict: Verdict, resolved: ResolvedQuery, operationName: string | undefined): boolean {
  if (verdict.kind !== 'pass' || verdict.reason !== 'stored-document-over-limits' || resolved.query === undefined) return false;
  const parsed = parseDocument(resolved.query);
  if ('kind' in parsed) return false;
  return parsed.operations.some((operation) => mayRun(operation, parsed.operations.length, operationName));
}

/**
 * A sent query over the limits is refused; a stored document the origin runs whatever svc-cache's
 * limits say, so one over them goes on as a document svc-cache cannot see (README, Stored documents
 * sent by id).
 */
function overLimits(resolved: ResolvedQuery, violation: LimitViolation): Verdict {
  return resolved.storedById ? passVerdict('stored-document-over-limits', violation.message) : limitExceeded(violation);
}

/**
 * The mutations an origin might run from a POST svc-cache could not read (README, Bad input): any
 * operation a reading of its body or URL names that is a mutation the origin could pick. Each reading is
 * held to the limits a readable request is held to, and refused as one would be. `unseen` when a
 * reading names no query but other members, or the only query text read does not parse, as a
 * stored document sent by its id does. Each reading's document is walked once for all its
 * mutations, however many spread the same fragments: the work stays linear in the request.
 */
export function possibleMutations(head: RequestHead, body: Buffer, limits: Config['limits']): Verdict | { mutations: PossibleMutations[]; unseen: boolean } {
  const readings = possibleOperations(head.path, head.headers, body, limits.maxRequestBodyBytes);
  if (readings === 'ambiguous') return ambiguousRequest(head);
  // A coded body larger decoded than a readable one may be: refused as that body would be.
  if (readings === 'too-large') return payloadTooLarge(limits);
  const mutations: PossibleMutations[] = [];
  let [unseen, unparsed, parsedAny] = [false, false, false];
  for (const { query, operationName } of readings) {
    if (query === undefined) {
      unseen = true;
      continue;
    }
    const tooLarge = queryTextViolation(query, limits);
    if (tooLarge) return limitExceeded(tooLarge);
    const parsed = parseDocument(query);
    if ('kind' in parsed) {
      unparsed = true;
      continue;
    }
    parsedAny = true;
    const operations = parsed.operations.filter((operation) => mayRun(operation, parsed.operations.length, operationName));
    if (operations.length === 0) continue;
    const tooNested = nestingViolation(parsed.nesting, limits);
    if (tooNested) return limitExceeded(tooNested);
    const violation = operationsViolation(parsed.document, operations, limits);
    if (violation) return limitExceeded(violation);
    mutations.push({ document: parsed.document, operations });
  }
  // A text that does not parse may be a stored document's id (envelop), unless another reading
  // gives the document the origin runs (a body in its declared charset).
  return { mutations, unseen: unseen || (unparsed && !parsedAny) };
}

/** The mutations of one reading's document that an origin may run (possibleMutations). */
export interface PossibleMutations {
  document: DocumentNode;
  operations: OperationDefinitionNode[];
}

/**
 * Whether an origin may run `operation`, one of `count` in its document, as the mutation a reading
 * names: one it could pick (a document of several runs only a named one). An empty name is no name
 * to some origins: every mutation counts then, as with none.
 */
function mayRun(operation: OperationDefinitionNode, count: number, operationName: string | undefined): boolean {
  if (operation.operation !== OperationTypeNode.MUTATION) return false;
  if (count > 1 && operation.name === undefined) return false;
  return operationName === undefined || operationName === '' || operation.name?.value === operationName;
}

/**
 * The operation an origin runs. An empty operationName names none to some origins and is an
 * unknown name to others (README, Bad input): a query then is the origin's to answer (PASS), but a
 * mutation either reading picks is one, refused over GET and invalidating over POST.
 */
function operationToRun(parsed: ParsedDocument, operationName: string | undefined): ReturnType<typeof selectOperation> {
  const selected = selectOperation(parsed, operationName);
  if (selected.kind === 'operation' || operationName !== '') return selected;
  const unnamed = selectOperation(parsed, undefined);
  return unnamed.kind === 'operation' && unnamed.operation.operation === OperationTypeNode.MUTATION ? unnamed : selected;
}

/** svc-cache's answer to a request that gives a parameter more than one way: origins differ on which wins. */
export function payloadTooLarge(limits: Config['limits']): Verdict {
  return ownError('PAYLOAD_TOO_LARGE', 413, `Request body is larger than ${limits.maxRequestBodyBytes} bytes`);
}

/** A batch whose persisted queries, expanded, take it over the body limit: refused as a body over it would be. */
export function expandedBatchTooLarge(limits: Config['limits']): Verdict {
  return ownError('PAYLOAD_TOO_LARGE', 413, `Request body is larger than ${limits.maxRequestBodyBytes} bytes with the persisted queries it names expanded`);
}

export function ambiguousRequest(head: RequestHead): Verdict {
  const response = ambiguousRequestResponse(ownAnswerMediaType(headerValue(head.headers, 'accept')));
  return { kind: 'respond', outcome: 'ERROR', errorCode: 'AMBIGUOUS_REQUEST', response };
}

function limitExceeded(violation: LimitViolation): Verdict {
  return ownError(violation.code, 400, violation.message);
}

// Stage 4: classify (purge | mutation | query | pass).

export type Classification =
  /** May be a purge: the purge handler decides; when it is none, `otherwise` holds. */
  | { kind: 'purge'; schema: GraphQLSchema; otherwise: Verdict | OriginBound }
  | OriginBound;

/** A request for the origin: a mutation whose answer is read, or a query that may be cached. */
export type OriginBound = { kind: 'mutation'; schema: GraphQLSchema } | { kind: 'query'; schema: GraphQLSchema; policy: CachePolicy };

/** The answer to a mutation sent with GET (GraphQL over HTTP): never forwarded. */
export function mutationOverGet(): Verdict {
  return ownError('METHOD_NOT_ALLOWED', 405, 'Mutations cannot be sent with GET; use POST', [['allow', 'POST']]);
}

/**
 * What kind of request this is. The purge API itself needs the store, so `classify` only says
 * when a request may be a purge (a mutation, or a query carrying the purge token header).
 */
export function classify(
  checked: CheckedOperation,
  request: { method: 'GET' | 'POST'; headers: HeaderList },
  config: Config,
  schema: GraphQLSchema | undefined,
): Verdict | Classification {
  const { operation } = checked.selected;
  const isMutation = operation.operation === OperationTypeNode.MUTATION;
  if (isMutation && request.method === 'GET') return mutationOverGet();
  if (!schema) {
    // The purge job retries on a 503; the origin would not know the purge fields.
    if (isMutation && carriesPurgeToken(request.headers, config.purge) && looksLikePurge(operation)) {
      return ownError('PURGE_UNAVAILABLE', 503, 'The purge API is not available until the origin schema is loaded', [['retry-after', '5']]);
    }
    return passVerdict(isMutation ? 'mutation' : 'schema-not-loaded');
  }
  const otherwise = isMutation ? classifyMutation(config, schema) : classifyQuery(checked, request.headers, config, schema);
  return isMutation || carriesPurgeToken(request.headers, config.purge) ? { kind: 'purge', schema, otherwise } : otherwise;
}

/** A mutation that is no purge: read its answer to invalidate, unless the policy says not to. */
function classifyMutation(config: Config, schema: GraphQLSchema): Verdict | OriginBound {
  return config.mutationPolicy === 'None' ? passVerdict('mutation') : { kind: 'mutation', schema };
}

/**
 * Request headers that can name whom the origin answers for (RFC 9111 section 3.5 names
 * `Authorization`; `Proxy-Authorization` is one too, which a proxy in front of the origin reads).
 */
const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie'] as const;

/**
 * Request headers that ask the origin to put the trace or plan of this very run in the answer's
 * `extensions`, which no stored answer holds, and which a stored answer would hand to every client
 * (README, HIT, MISS, PASS): Apollo Federation's inline trace (`ftv1`, which a router asks of a
 * subgraph on the requests it samples, and Apollo Server and Yoga answer), Apollo tracing
 * (`extensions.tracing`, read by Hot Chocolate and Sangria), Hot Chocolate's `GraphQL-Tracing` and
 * Fusion query plan, and the query plans of Apollo Router (`Apollo-Expose-Query-Plan`, and Apollo
 * Gateway's older `Apollo-Query-Plan-Experimental`), Hive Gateway and WunderGraph Cosmo.
 */
const TRACE_REQUEST_HEADERS: ReadonlySet<string> = new Set([
  'apollo-federation-include-trace',
  'x-apollo-tracing',
  'graphql-tracing',
  'graphql-query-plan',
  'apollo-expose-query-plan',
  'apollo-query-plan-experimental',
  'hive-expose-query-plan',
  'x-wg-include-query-plan',
]);

function classifyQuery(checked: CheckedOperation, headers: HeaderList, config: Config, schema: GraphQLSchema): Verdict | OriginBound {
  if (checked.selected.operation.operation === OperationTypeNode.SUBSCRIPTION) return passVerdict('subscription');
  if (checked.analysis.streams) return passVerdict('streaming-document');
  // Decided only now, so APQ, the limits and the GET-mutation rule apply to such clients too.
  if (acceptsNoJson(headerValue(headers, 'accept'))) return passVerdict('streaming-request');
  if (checked.analysis.unnamedIntrospection) return passVerdict('introspection');
  if (checked.analysis.untypedSelection) return passVerdict('schema-lacks-field');
  if (config.cache.bypassCacheHeaders.some((name) => headerValue(headers, name) !== undefined)) {
    return passVerdict('bypass-header');
  }
  // One pass over the request's headers: this runs on every HIT.
  if (headers.some(([name]) => TRACE_REQUEST_HEADERS.has(name))) return passVerdict('trace-requested');
  const { policy } = checked.analysis;
  if (!policy) return passVerdict('no-rule');
  if (policy.maxAge <= 0) return passVerdict('max-age-zero');
  const ambiguous = ambiguousScopeSource(policy.scopes, config.scopes, headers);
  if (ambiguous !== undefined) return passVerdict('ambiguous-scope-value', ambiguous);
  if (!config.cache.publicForCredentialedRequests) {
    // An empty value names no one: Apollo's documented auth link sends `authorization: ""` from
    // every client without a token, and origins read it as none. A placeholder (`Bearer null`)
    // still counts: an origin may refuse it where it answers a request without one.
    const credentials = CREDENTIAL_HEADERS.filter((name) => (headerValue(headers, name)?.trim() ?? '') !== '');
    if (credentials.length > 0 && policy.scopes.length === 0) return passVerdict('credentials-on-public');
    // A scope's share of "no value" is shared like PUBLIC, and no scope reads these credentials.
    if (credentials.length > 0 && sharedBucketDespite(credentials, policy.scopes, config.scopes, headers)) {
      return passVerdict('credentials-outside-scope');
    }
  }
  return { kind: 'query', schema, policy };
}

// Stage 5: scope and key (docs/graphql-caching.md, Scopes; docs/graphql-caching.md, Cache key).

export interface ScopedKey {
  bucket: string;
  key: string;
  /** Request headers the scopes read, then the bypass headers: cached answers vary on them. */
  varyNames: string[];
  /**
   * Headers that cached answers of this scope carry: a custom scope's `cache-control` (scopesTheAnswer)
   * and `vary`, or for PUBLIC the bypass headers' `vary` alone, if any are configured.
   */
  scopeHeaders: Array<[string, string]>;
}

export function scopeAndKey(
  policy: CachePolicy,
  selected: SelectedOperation,
  parameters: { canonicalVariables: string; orderedVariables: string; canonicalExtensions: string; otherMembers: string },
  schema: GraphQLSchema,
  target: KeyedTarget,
  headers: HeaderList,
  config: Config,
  scopeKeySecret: Buffer,
  jwtIdentities: ReadonlyMap<string, string | undefined>,
): ScopedKey {
  const bucket = scopeBucketKey(policy.scopes, config.scopes, headers, scopeKeySecret, jwtIdentities);
  const variables = variablesKeyText(parameters, selected.operation, schema);
  const key = cacheKey(bucket, target, selected.name, selected.normalised, variables, parameters.canonicalExtensions, parameters.otherMembers, taggingPart(config));
  // A request with a bypass header is answered otherwise (classifyQuery): a cache downstream must
  // not hand a cached answer to it, as Stellate's `vary` says (README, Scopes).
  // This runs on every HIT: nothing is copied when no bypass header is configured (the default).
  const scopeVary = scopeVaryHeaders(policy.scopes, config.scopes);
  const bypass = config.cache.bypassCacheHeaders;
  const varyNames = bypass.length === 0 ? scopeVary : [...scopeVary, ...bypass];
  const vary: Array<[string, string]> = varyNames.length === 0 ? [] : [['vary', varyNames.join(', ')]];
  const scopeHeaders: Array<[string, string]> = policy.scopes.length === 0 ? vary : [['cache-control', 'private, no-cache'], ...vary];
  return { bucket, key, varyNames, scopeHeaders };
}

/** What `svc-debug` shows of a request's scope, bucket and rules; built only for a request that asks. */
export function scopeExplanation(policy: CachePolicy, bucket: string, config: Config): Explanation {
  return { scope: policy.scopes.length === 0 ? 'PUBLIC' : policy.scopes.join('+'), bucket, rules: matchedRuleNames(policy, config) };
}

/** The matched rules as `svc-debug-rules` names them: each one's description, or `rules[i]`. */
export function matchedRuleNames(policy: CachePolicy, config: Config): string {
  return policy.matched.map((rule) => rule.description ?? `rules[${config.rules.indexOf(rule)}]`).join('; ');
}

// Stage 6: lookup/coalesce.

export type LookupResult =
  | { kind: 'hit'; entry: CachedResponse }
  /**
   * Go to the origin; `leadership` is set when this request leads the fetch others wait for, and
   * `expired` holds the entry found past its maxAge, for an origin that fails (stale-if-error).
   */
  | { kind: 'miss'; mark: InvalidationMark; leadership: Leadership | undefined; expired: CachedResponse | undefined }
  | { kind: 'unavailable'; error: string };

export interface LookupDependencies {
  store: CacheStore;
  coalescer: MissCoalescer;
  now: () => number;
  coalesceWaitMs: number;
  /** The swr of the rules the request was decided under: a reload that shortens it applies to entries stored before. */
  ruleSwr: number;
  /** Told of each request answered from the entry its leader's fetch stored. */
  onCoalesced: () => void;
  /**
   * Run while the store answers the lookup, when it does not answer at once. Must not throw: the
   * lookup is not awaited yet, so its rejection would go unhandled.
   */
  meanwhile: () => void;
}

export async function lookupOrCoalesce(key: string, deps: LookupDependencies): Promise<LookupResult> {
  let lookup;
  try {
    const found = deps.store.lookup(key);
    if (found instanceof Promise) deps.meanwhile();
    lookup = found instanceof Promise ? await found : found;
  } catch (error) {
    return { kind: 'unavailable', error: errorMessage(error) };
  }
  const cached = freshEntry(lookup.entry, deps.now());
  if (cached) return { kind: 'hit', entry: cached };
  const miss = { kind: 'miss', mark: lookup.mark, leadership: undefined, expired: lookup.entry } as const;
  const leadership = deps.coalescer.lead(key);
  if (leadership) return { ...miss, leadership };
  // Stale-while-revalidate: another request is already refreshing this entry, so within swr its
  // stale answer is served at once (with an age past max-age) instead of waiting. The window is the
  // shorter of the entry's and the rules', as for stale-if-error (staleIfError.ts).
  const stale = lookup.entry;
  if (stale && deps.now() - stale.storedAt <= (stale.maxAge + Math.min(stale.swr, deps.ruleSwr)) * 1000) return { kind: 'hit', entry: stale };
  if (!(await deps.coalescer.follow(key, deps.coalesceWaitMs))) return miss;
  try {
    const afterLeader = freshEntry((await deps.store.lookup(key)).entry, deps.now());
    if (!afterLeader) return miss;
    deps.onCoalesced();
    return { kind: 'hit', entry: afterLeader };
  } catch (error) {
    return { kind: 'unavailable', error: errorMessage(error) };
  }
}

function freshEntry(entry: CachedResponse | undefined, now: number): CachedResponse | undefined {
  return entry !== undefined && isFresh(entry, now) ? entry : undefined;
}
