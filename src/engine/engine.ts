import { OperationTypeNode, type DocumentNode, type GraphQLSchema } from 'graphql';
import { persistedQueryNotFound, registerPersistedQuery, type PersistedQueryRefusal } from '../apq/index.js';
import type { PersistedQueryRegistration, PersistedQueryRegistry, PersistedQueryWarnings } from '../apq/index.js';
import type { Config, MutationPolicy } from '../config/index.js';
import { batchForOrigin, fragmentsOf, hasUrlParameter, parseDocument, rewrittenForOrigin } from '../graphql/index.js';
import { type GraphQLOperation, type OriginChanges, type RequestParameters } from '../graphql/index.js';
import { graphQLErrorResponse, hitNegotiation, mayAnswerWithHtml, namesStreamingType, ownAnswerMediaType, type HitNegotiation } from '../http/index.js';
import { headerValue, preconditionVerdict, varyNames, type HeaderList } from '../http/index.js';
import { endpointOf, endpointRouting, forbidsTransform, keyedHeaders, requestForbidsStoring, type EndpointRouting } from '../http/index.js';
import { listArgumentIndex, prepareOperation, type PreparedOperation } from '../invalidation/index.js';
import { MAX_INVALIDATED_ENTITIES, mutationInvalidationTags } from '../invalidation/index.js';
import { operationsRootFieldTypes, rootFieldTypes, rootFieldTypeTags } from '../invalidation/index.js';
import { RepeatedWarning, type InvalidationSource, type Logger } from '../observability/index.js';
import {
  carriesPurgeToken,
  handlePurgeRequest,
  hasValidPurgeToken,
  purgeTokenHeader,
  withoutEmptyPurgeParentheses,
  type PurgeEvent,
} from '../purge/index.js';
import { compressBody, identityBodyOf, UnconfirmedInvalidation, type CacheStore, type CachedResponse, type CompressionSettings } from '../store/index.js';
import { errorMessage, isPlainObject, shortened } from '../util/index.js';
import { MissCoalescer } from './coalescing.js';
import { documentHashOf, Exchange, type BatchPlan, type Explanation, type MutationPlan, type PassPlan, type RequestHead, type ResponsePlan, type StaleHold, type StorePlan } from './exchange.js';
import type { PassReason } from './passReason.js';
import {
  ambiguousRequest,
  expandedBatchTooLarge,
  payloadTooLarge,
  checkLimits,
  checkSentQueryText,
  classify,
  isVerdict,
  lookupOrCoalesce,
  isStoredMutation,
  mutationOverGet,
  possibleMutations,
  readParameters,
  refusedForEach,
  resolveQuery,
  type ResolutionDependencies,
  scopeAndKey,
  scopeExplanation,
  matchedRuleNames,
  analyseDocument,
  type CheckedOperation,
  type DocumentAnalysis,
  type OriginBound,
  type ResolvedQuery,
  type Verdict,
} from './requestStages.js';
import {
  entryToStore,
  isReadable,
  parseBatchResults,
  parseGraphQLResult,
  ranUnseenMutation,
  whatRan,
  isSuccess,
  isHoldable,
  passedBody,
  planAfterResponseHead,
  wantsResponseBody,
  withBody,
} from './responseStages.js';
import type { KeyedTarget } from './cacheKey.js';
import type { CachePolicy } from './rules.js';
import { JwtScopes } from './jwtScopes.js';
import { scopeKeyedHeaders } from './scopes.js';
import { fitToEnvoyLimits, fittedRequestChanges, hitFitsEnvoyLimits, immediateFits } from './headerRoom.js';
import { LateInvalidations } from './lateInvalidations.js';
import { PendingInvalidations } from './pendingInvalidations.js';
import {
  cacheStatusHeader,
  explanationHeaders,
  hitResponse,
  joinedChanges,
  mergeScopeHeaders,
  notModifiedResponse,
  rewrittenBodyChanges,
  scopedEntryHeaders,
  withoutOriginsCopiesOfOwnHeaders,
  withoutSharedCacheGrants,
  scopesTheAnswer,
  type HeaderChanges,
  type Replay,
} from './responses.js';
import { failureByHead, isGraphQLResult, staleResponse, withinStaleIfError, type OriginFailure } from './staleIfError.js';
import type { HttpResponse } from '../http/index.js';
import { stripAddedFields } from '../invalidation/index.js';

export { Exchange } from './exchange.js';
export type { CacheStatus, Explanation, RequestHead, RequestSummary, ResponsePlan } from './exchange.js';
export type { PassReason } from './passReason.js';
export type { HeaderChanges } from './responses.js';
export type { OriginFailure } from './staleIfError.js';

/**
 * The decision engine: what to do with one GraphQL request and, if it went to the origin, with the
 * origin's response. It knows nothing of gRPC; `src/extproc` translates Envoy's messages to these
 * calls and the answers back (docs/ext-proc.md, Message order).
 *
 * Per request: `begin` makes its Exchange; then `requestHead` (GET requests are decided there),
 * `requestBody` when a body follows, and `responseHead` and `responseBody` for whatever was
 * forwarded. None of them throws: a fault of the engine's own passes the request on.
 */

/** What svc-cache is running with right now; hot reload swaps it for new requests. */
export interface RuntimeState {
  config: Config;
  /** Undefined until the origin schema is loaded: nothing is cached meanwhile. */
  schema: GraphQLSchema | undefined;
}

/** What the engine reports for metrics and logs beyond each request's outcome. */
export interface EngineEvents {
  persistedQuery(event: 'registered' | PersistedQueryRefusal): void;
  purge(event: PurgeEvent): void;
  invalidation(
    event: { policy: MutationPolicy; from: InvalidationSource; tags: number; removedEntries: number } | { policy: MutationPolicy; from: InvalidationSource; failed: string },
  ): void;
  /** A request was answered from the entry another request's fetch stored, after waiting for it. */
  coalesced(): void;
  /** The origin failed and the client got the expired entry instead (README, Stale-if-error). */
  staleIfError(failure: OriginFailure): void;
}


export interface EngineDependencies {
  state: () => RuntimeState;
  store: CacheStore;
  /** The registry of automatic persisted queries (hash to query text). */
  persistedQueries: PersistedQueryRegistry;
  /**
   * The longest `:path` a GET rewritten for the origin may have: Envoy answers 500 when a mutation
   * leaves the request headers over its limit (src/extproc/envoyLimits.ts, which the sidecar passes).
   */
  maxRewrittenPathBytes: number;
  events?: EngineEvents;
  /** Key of the hash that names scope buckets; replicas sharing a store must share it. */
  scopeKeySecret: Buffer;
  logger: Logger;
  now?: () => number;
}

export type RequestDecision =
  /** Answer now without the origin: a HIT, a purge, or an error svc-cache owns. */
  | { kind: 'respond'; response: HttpResponse }
  /**
   * Let the request go on, its headers changed and its body replaced by `requestBody` when given
   * (only ever for a request whose body the engine was handed).
   */
  | { kind: 'forward'; requestHeaders: HeaderChanges; requestBody?: Buffer };

export type RequestHeadDecision = RequestDecision | { kind: 'need-body' };

export interface ResponseHeadDecision {
  headers: HeaderChanges;
  /** True when the engine needs the body (`responseBody` follows). */
  wantsBody: boolean;
  /** Answer with this in place of the origin's whole response (a stale entry for a failing origin). */
  replacement?: HttpResponse;
}

export interface ResponseBodyDecision {
  headers: HeaderChanges;
  /** Replaces the origin's body for the client when given. */
  body?: Buffer;
  /** Answer with this in place of the origin's whole response (a stale entry for a failing origin). */
  replacement?: HttpResponse;
}

/** A request whose GraphQL parameters svc-cache read, with the bytes it came with. */
interface ReadRequest extends GraphQLOperation {
  method: 'GET' | 'POST';
  /** The POST body as sent (empty for a GET): a rewrite for the origin keeps what it does not change. */
  body: Buffer;
  target: KeyedTarget;
  /** A POST body's members other than GraphQL's, canonical, for the key; '' when none. */
  otherMembers: string;
}

/** What one request's decision needs once its GraphQL parameters are read. */
interface RequestContext {
  exchange: Exchange;
  head: RequestHead;
  config: Config;
  request: ReadRequest;
  resolved: ResolvedQuery;
}

export class DecisionEngine {
  private readonly now: () => number;
  private readonly coalescer = new MissCoalescer();
  /** Per parsed document (documents are remembered by query text): what its text alone decides. */
  private readonly analyses = new WeakMap<DocumentNode, DocumentAnalysis>();
  private readonly jwtScopes: JwtScopes;
  private readonly pendingInvalidations = new PendingInvalidations(
    (what) => this.retryInvalidation(what),
    (error, failures) => this.deps.logger.warn({ err: errorMessage(error), failures }, 'invalidation after mutation still failing; retrying'),
  );
  /** The same root fields' types again, later, after a mutation whose answer never came (invalidationWithoutResponse). */
  private readonly lateInvalidations = new LateInvalidations((tags) => this.invalidate(this.deps.state().config.mutationPolicy, tags, 'root-field-types'));
  /** The flush of the whole store running, and the one waiting behind it (`invalidateEverything`). */
  private runningFlush: Promise<void> | undefined;
  private queuedFlush: Promise<void> | undefined;
  /** While the store fails, every request would log these: a line, then one per 10 s (RepeatedWarning). */
  private readonly storeWarnings: Record<'lookup' | 'stale' | 'store', RepeatedWarning>;
  private readonly apqWarnings: PersistedQueryWarnings;
  /** Any client can send a purge without a token: a line, then one per 10 s (README, Purge API). */
  private readonly purgeRefusals: RepeatedWarning;

  constructor(private readonly deps: EngineDependencies) {
    this.now = deps.now ?? Date.now;
    this.jwtScopes = new JwtScopes({ secret: deps.scopeKeySecret, now: this.now });
    const warning = (message: string): RepeatedWarning => new RepeatedWarning(deps.logger, message, STORE_WARNING_INTERVAL_MS, this.now);
    this.storeWarnings = {
      lookup: warning('cache store unavailable; passing to origin'),
      stale: warning('cache store unavailable; relaying the origin failure'),
      store: warning('cache store unavailable; response not stored'),
    };
    this.apqWarnings = {
      registryUnavailable: warning('persisted query registry unavailable'),
      notRegistered: warning('persisted query not registered'),
    };
    this.purgeRefusals = warning('purge refused');
    deps.store.onReconnect(() => this.pendingInvalidations.retryNow());
  }

  /** Invalidations after mutations that failed and wait for their retry (README, Invalidation after mutations). */
  get invalidationsPending(): boolean {
    return this.pendingInvalidations.pending;
  }

  /** Invalidations scheduled for later are dropped: the store is closing. */
  close(): void {
    this.lateInvalidations.close();
  }

  /**
   * The exchange of one HTTP request; without a head, a response whose request svc-cache never saw.
   * `explain` explains the decision as `svc-debug: 1` with the purge token does, without the token,
   * whose header routes an introspection query to the purge API (the dashboard's inspector).
   */
  begin(head?: RequestHead, { explain = false }: { explain?: boolean } = {}): Exchange {
    const exchange = new Exchange(head);
    if (!head) return exchange;
    const { config } = this.deps.state();
    if (explain || explanationRequested(head, config)) exchange.explanation = {};
    if (carriesPurgeToken(head.headers, config.purge)) exchange.tokenHeader = purgeTokenHeader(config.purge);
    return exchange;
  }

  async requestHead(exchange: Exchange): Promise<RequestHeadDecision> {
    return this.guarded(exchange, 'request headers', () => this.decideRequestHead(exchange, requestHeadOf(exchange)));
  }

  async requestBody(exchange: Exchange, body: Buffer): Promise<RequestDecision> {
    return this.guarded(exchange, 'the request body', async () => {
      const { config } = this.deps.state();
      const head = requestHeadOf(exchange);
      const operationBatch = head.method === 'POST' && runsOperationBatch(head.path);
      if (endpointOf(head.path, config.endpoints) === undefined) {
        // A path an origin may route to an endpoint (passOtherPath), read only within an endpoint's limit.
        const foundOnly = readsFoundMutationsOnly(endpointRouting(head.path, config.endpoints));
        if (body.length > config.limits.maxRequestBodyBytes || operationBatch) {
          const reason = operationBatch ? 'batch' : 'not-an-endpoint';
          return foundOnly ? this.passOn(exchange, reason) : this.passUnseen(exchange, config, { kind: 'pass', reason });
        }
        return this.passUnread(exchange, 'not-an-endpoint', 'routed to an endpoint', body, { foundOnly });
      }
      if (head.method === 'GET' && body.length > 0) return this.passOn(exchange, 'get-with-body');
      if (body.length > config.limits.maxRequestBodyBytes) return this.conclude(exchange, payloadTooLarge(config.limits));
      const parameters = readParameters(head, body);
      if (operationBatch) return this.passOperationBatch(exchange, parameters, body);
      return this.decideGraphQL(exchange, parameters, body);
    });
  }

  /**
   * Hot Chocolate's `batchOperations` runs operations of the document that svc-cache does not pick:
   * the request passes, as an operation svc-cache cannot see when it may run a mutation. A
   * persisted query's hash is expanded for the origin all the same (a review saw one reach an origin
   * without APQ alone: "Missing query").
   */
  private async passOperationBatch(exchange: Exchange, parameters: RequestParameters, body: Buffer): Promise<RequestDecision> {
    const { config } = this.deps.state();
    const batch: Verdict & { kind: 'pass' } = { kind: 'pass', reason: 'batch' };
    if (parameters.kind !== 'graphql') return mayRunMutation(parameters) ? this.passUnseen(exchange, config, batch) : this.passOn(exchange, 'batch');
    const head = requestHeadOf(exchange);
    const request: ReadRequest = { ...parameters, method: 'POST', body, target: keyedTargetOf(head, config, parameters.otherUrlParameters) };
    // Held to the limits a plain POST is, before its text is parsed (a review).
    const sentTooLarge = checkSentQueryText(request.params, config.limits);
    if (sentTooLarge) return this.conclude(exchange, sentTooLarge);
    if (runsDocumentByIdInstead(parameters)) return this.passUnseen(exchange, config, { kind: 'pass', reason: 'query-beside-document-id' });
    const resolving = resolveQuery(request.params, parameters.documentIds, this.resolutionDependencies(config));
    const resolved = resolving instanceof Promise ? await resolving : resolving;
    if ('kind' in resolved) {
      this.report((events) => events.persistedQuery(resolved.refusal));
      return this.conclude(exchange, resolved.verdict);
    }
    const context: RequestContext = { exchange, head, config, request, resolved };
    const unseen = resolved.query === undefined || mayMutate(resolved.query);
    return unseen ? this.passUnseen(exchange, config, batch, context) : this.passOn(exchange, 'batch', undefined, context);
  }

  async responseHead(exchange: Exchange, status: number, headers: HeaderList, endOfStream: boolean): Promise<ResponseHeadDecision> {
    try {
      const decision = await this.decideResponseHead(exchange, status, headers, endOfStream);
      return { ...decision, headers: this.fitted(headers, decision.headers) };
    } catch (error) {
      this.deps.logger.error({ err: errorMessage(error) }, 'decision engine failed on response headers; passing through');
      exchange.responseArrived(headers, { kind: 'pass', reason: 'engine-error' });
      exchange.settle('PASS', { passReason: 'engine-error' });
      return { headers: { set: [], remove: [] }, wantsBody: false };
    }
  }

  async responseBody(exchange: Exchange, body: Buffer): Promise<ResponseBodyDecision> {
    try {
      const decision = await this.decideResponseBody(exchange, exchange.plan ?? { kind: 'pass', reason: 'engine-error' }, body);
      return { ...decision, headers: this.fitted(exchange.responseHeaders, decision.headers, decision.body) };
    } catch (error) {
      this.deps.logger.error({ err: errorMessage(error) }, 'decision engine failed on the response body; passing through');
      exchange.settle('PASS', { passReason: 'engine-error' });
      return { headers: { set: [], remove: [] } };
    } finally {
      exchange.releaseLeadership();
    }
  }

  /** The changes to the origin's answer headers within Envoy's limits, or a warning that they cannot be. */
  private fitted(origin: HeaderList, changes: HeaderChanges, replacedBody?: Buffer): HeaderChanges {
    const fitted = fitToEnvoyLimits(origin, withoutOriginsCopiesOfOwnHeaders(origin, changes), replacedBody);
    if (!fitted.fits) {
      this.deps.logger.warn({ headerCount: origin.length }, "origin answer's headers over Envoy's limits after svc-cache's changes; Envoy answers 500");
    }
    return fitted.changes;
  }

  /** An engine fault must not fail the client's request: it goes on to the origin, less the purge token. */
  private async guarded<T extends RequestHeadDecision>(exchange: Exchange, phase: string, decide: () => Promise<T>): Promise<T | RequestDecision> {
    try {
      return await decide();
    } catch (error) {
      this.deps.logger.error({ err: errorMessage(error), phase }, 'decision engine failed on the request; passing through');
      exchange.releaseLeadership();
      return this.passOn(exchange, 'engine-error');
    }
  }

  private async decideRequestHead(exchange: Exchange, head: RequestHead): Promise<RequestHeadDecision> {
    const { config } = this.deps.state();
    // Only the configured endpoints are GraphQL: another path (which may reflect its input) is
    // neither read nor keyed, so it cannot write an entry /graphql serves (README, HIT, MISS, PASS).
    if (endpointOf(head.path, config.endpoints) === undefined) return this.passOtherPath(exchange, head, config);
    if (headerValue(head.headers, 'upgrade') !== undefined) return this.passOn(exchange, 'upgrade-request');
    if (head.method === 'GET') {
      // Over HTTP/2 a GET may end with an empty DATA frame: its headers then lack end_of_stream and
      // only the body tells whether it has one (docs/ext-proc.md, HTTP/2 requests).
      if (head.hasBody) return { kind: 'need-body' };
      return this.decideGraphQL(exchange, readParameters(head, NO_BODY), NO_BODY);
    }
    if (head.method !== 'POST') return this.passOn(exchange, 'method-not-graphql', head.method);
    const declaredLength = Number(headerValue(head.headers, 'content-length'));
    if (declaredLength > config.limits.maxRequestBodyBytes) return this.conclude(exchange, payloadTooLarge(config.limits));
    if (!head.hasBody) return this.decideGraphQL(exchange, readParameters(head, NO_BODY), NO_BODY);
    return { kind: 'need-body' };
  }

  /**
   * A path that is no endpoint passes unread, but for one the origin may route to its GraphQL
   * handler: a variant of an endpoint (`/graphql/` beside `/graphql`), or a path below one
   * (`/graphql/x`, which a handler mounted on the endpoint as a prefix serves). A POST there is read
   * for mutations as a body svc-cache cannot read is (passUnread), by its body whatever its content
   * type (uploads and forms included) and by its URL, held to an endpoint's limits since such a
   * handler runs what a padded or ambiguous body holds; one that declares more bytes than an
   * endpoint's request may have is an operation svc-cache cannot see (README, Invalidation after
   * mutations). A GET there is refused when its URL holds a mutation.
   */
  private passOtherPath(exchange: Exchange, head: RequestHead, config: Config): RequestHeadDecision {
    // The method first: working out a long path's routing is the costlier test.
    const routing = head.method === 'POST' || head.method === 'GET' ? endpointRouting(head.path, config.endpoints) : undefined;
    if (routing === undefined) return this.passOn(exchange, 'not-an-endpoint');
    const foundOnly = readsFoundMutationsOnly(routing);
    // A GET there is refused only when its URL holds a mutation, as the endpoint refuses it; any other
    // GET goes on, over the limits or ambiguous too: other GET routes may live below an endpoint.
    // A POST without a body is read by its URL (express-graphql takes a POST's `query` there).
    if (head.method === 'GET' || !head.hasBody) {
      return this.passUnread(exchange, 'not-an-endpoint', 'routed to an endpoint', NO_BODY, { foundOnly: foundOnly || head.method === 'GET' });
    }
    if (Number(headerValue(head.headers, 'content-length')) > config.limits.maxRequestBodyBytes) {
      return foundOnly ? this.passOn(exchange, 'not-an-endpoint') : this.passUnseen(exchange, config, { kind: 'pass', reason: 'not-an-endpoint' });
    }
    return { kind: 'need-body' };
  }

  /** The stages of docs/graphql-caching.md, Cacheability, in order (see requestStages.ts). */
  private async decideGraphQL(exchange: Exchange, parameters: RequestParameters, body: Buffer): Promise<RequestDecision> {
    const { config, schema } = this.deps.state();
    const head = requestHeadOf(exchange);
    switch (parameters.kind) {
      case 'ambiguous':
        // Origins differ on which reading wins: never forwarded (README, Bad input).
        return this.conclude(exchange, ambiguousRequest(head));
      case 'uninterpretable':
        return this.passUnread(exchange, parameters.reason === 'invalid-utf8' ? 'invalid-utf8' : 'uninterpretable-body', parameters.reason, body);
      case 'batch':
        return this.decideBatch(exchange, parameters.operations, body);
      case 'graphql':
        break;
    }
    const request: ReadRequest = { ...parameters, method: head.method === 'GET' ? 'GET' : 'POST', body, target: keyedTargetOf(head, config, parameters.otherUrlParameters) };
    const { params } = request;
    const sentTooLarge = checkSentQueryText(params, config.limits);
    if (sentTooLarge) return this.conclude(exchange, sentTooLarge);
    if (head.method === 'POST' && runsDocumentByIdInstead(parameters)) return this.passUnseen(exchange, config, { kind: 'pass', reason: 'query-beside-document-id' });
    const resolving = resolveQuery(params, parameters.documentIds, this.resolutionDependencies(config));
    const resolved = resolving instanceof Promise ? await resolving : resolving;
    if ('kind' in resolved) {
      this.report((events) => events.persistedQuery(resolved.refusal));
      return this.conclude(exchange, resolved.verdict);
    }
    // A stored document named by its persisted-query hash is keyed by it: the origin runs the id, and
    // may refuse the text (README, Stored documents sent by id). So is a persisted query forwarded as
    // sent (`apq.forwardPersistedQuery`): an origin with APQ of its own refuses a hash not spelt as
    // the lower-case SHA-256 it computes (an outside audit saw one served the other's answer).
    const keyedById = resolved.storedById || (resolved.persisted && config.apq.forwardPersistedQuery);
    const keyed = keyedById ? { ...request, canonicalExtensions: request.canonicalExtensionsById } : request;
    const context: RequestContext = { exchange, head, config, request: keyed, resolved };
    const checked = checkLimits(resolved, config.limits, params.operationName, (document) => this.analysisOf(document, config, schema));
    if (isVerdict(checked)) {
      if (head.method === 'GET' && isStoredMutation(checked, resolved, params.operationName)) return this.conclude(exchange, mutationOverGet());
      const purge = await this.emptyParenthesesPurge(context, checked, schema);
      if (purge === undefined && checked.kind === 'pass' && runsUnseen(checked.reason, resolved.query)) return this.passUnseen(exchange, config, checked, context);
      return this.conclude(exchange, purge ?? checked, context);
    }
    // It parses and passes the limits: registered once an answer with data shows the origin runs it.
    exchange.registration = resolved.registration;
    exchange.describeOperation(checked.selected.name, documentHashOf(checked.selected));
    const classified = classify(checked, { method: request.method, headers: context.head.headers }, config, schema);
    let next: Verdict | OriginBound;
    if (classified.kind === 'purge') {
      const purged = await this.purge(context, checked, classified.schema);
      if (purged) return this.conclude(exchange, purged);
      next = classified.otherwise;
    } else {
      next = classified;
    }
    if (isVerdict(next)) {
      // The rules that said maxAge 0 are named, as those of a query cached are (a new user's run).
      const { policy } = checked.analysis;
      if (exchange.explanation && policy && next.kind === 'pass' && next.reason === 'max-age-zero') exchange.explanation.rules = matchedRuleNames(policy, config);
      return this.conclude(exchange, next, context);
    }
    if (next.kind === 'mutation') return this.forwardMutation(context, checked, next.schema);
    // A GET (a mutation in it was refused above) may run the query its id names instead: not stored.
    if (runsDocumentByIdInstead(parameters)) return this.passOn(exchange, 'query-beside-document-id', undefined, context);
    if (parameters.readDifferently !== undefined) return this.passOn(exchange, 'uninterpretable-body', parameters.readDifferently, context);
    return this.decideQuery(context, checked, next.schema, next.policy);
  }

  /**
   * A batch (a JSON array, as Apollo's BatchHttpLink sends) goes to the origin as sent, but for
   * persisted queries expanded and the `id` beside an operation's document left out
   * (originChangesOf), and is never stored: each operation is read, under the limits, so
   * that its mutations invalidate from the array of answers (docs/graphql-caching.md, Invalidation),
   * and the hashes sent with their text are registered (registerFromBatch). One svc-cache refuses (a
   * hash it does not know) refuses the batch, as it would refuse the element alone: the origin may
   * know the hash, and svc-cache could not see the mutation it would run.
   */
  private async decideBatch(exchange: Exchange, operations: readonly GraphQLOperation[], body: Buffer): Promise<RequestDecision> {
    const { config, schema } = this.deps.state();
    const mutations: Array<MutationPlan | undefined> = [];
    const unseen: number[] = [];
    const changes: Array<OriginChanges | undefined> = [];
    const registrations: Array<PersistedQueryRegistration | undefined> = [];
    // Texts a hash or an id names are read as a body's are: their bytes count against its limit,
    // or a batch of 100-byte references would have megabytes parsed (README, Bad input).
    let readBytes = body.length;
    for (const operation of operations) {
      const { params, documentIds } = operation;
      const sentTooLarge = checkSentQueryText(params, config.limits);
      if (sentTooLarge) return this.conclude(exchange, sentTooLarge);
      if (runsDocumentByIdInstead(operation) && config.mutationPolicy !== 'None') {
        unseen.push(mutations.length);
        mutations.push(undefined);
        changes.push(undefined);
        registrations.push(undefined);
        continue;
      }
      const resolved = await resolveQuery(params, documentIds, this.resolutionDependencies(config));
      if ('kind' in resolved) {
        this.report((events) => events.persistedQuery(resolved.refusal));
        return this.conclude(exchange, refusedForEach(resolved.verdict, operations.length));
      }
      if (params.query === undefined && resolved.query !== undefined) readBytes += Buffer.byteLength(resolved.query);
      if (readBytes > config.limits.maxRequestBodyBytes) return this.conclude(exchange, expandedBatchTooLarge(config.limits));
      changes.push(originChangesOf(operation, resolved, config));
      const checked = checkLimits(resolved, config.limits, params.operationName, (document) => this.analysisOf(document, config, schema));
      if (isVerdict(checked) && checked.kind === 'respond') return this.conclude(exchange, checked);
      // As for a single request: registered once its answer shows data (registerFromBatch).
      registrations.push(isVerdict(checked) ? undefined : resolved.registration);
      if (isVerdict(checked) && checked.kind === 'pass' && runsUnseen(checked.reason, resolved.query) && config.mutationPolicy !== 'None') unseen.push(mutations.length);
      mutations.push(isVerdict(checked) ? undefined : this.batchedMutation(checked, config, schema));
    }
    const origin = changes.some((changed) => changed !== undefined) ? batchForOrigin(requestHeadOf(exchange).path, body, changes) : undefined;
    // JSON escapes a text's control characters in six bytes each.
    if (origin?.body !== undefined && origin.body.length > config.limits.maxRequestBodyBytes) return this.conclude(exchange, expandedBatchTooLarge(config.limits));
    const registers = registrations.some((registration) => registration !== undefined);
    const watched = unseen.length > 0 || mutations.some((mutation) => mutation !== undefined) || registers;
    if (!watched && origin === undefined) return this.passOn(exchange, 'batch');
    const plan: ResponsePlan = watched
      ? { kind: 'batch', mutations, unseen, ...(registers ? { registrations } : {}), maxResponseBodyBytes: config.limits.maxResponseBodyBytes }
      : { kind: 'pass', reason: 'batch' };
    const head = requestHeadOf(exchange);
    // Identity bodies are what svc-cache reads.
    const remove = [...tokenRemoval(head, config), ...(watched ? ['accept-encoding'] : [])];
    const requestHeaders = fittedRequestChanges(head.headers, { set: origin?.path === undefined ? [] : [[':path', origin.path]], remove }, origin?.body);
    if (requestHeaders === undefined) return this.forwardOverLimits({ exchange, head, config }, plan, changes.some((changed) => changed?.withoutId === true));
    this.forwardUnder(exchange, plan);
    return { kind: 'forward', requestHeaders, ...(origin === undefined ? {} : { requestBody: origin.body }) };
  }

  private resolutionDependencies(config: Config): ResolutionDependencies {
    return { apq: config.apq, registry: this.deps.persistedQueries, warnings: this.apqWarnings, documents: config.persistedDocuments?.documents };
  }

  private batchedMutation(checked: CheckedOperation, config: Config, schema: GraphQLSchema | undefined): MutationPlan | undefined {
    if (checked.selected.operation.operation !== OperationTypeNode.MUTATION || !schema || config.mutationPolicy === 'None') return undefined;
    // The origin gets the batch as sent: answers lack any key field svc-cache would add, and
    // entities without their key invalidate their whole type (broader, never narrower).
    return mutationPlan(checked.selected.document, config, schema);
  }

  /** A popular query's limits and rules are worked out once per config and schema, not per HIT (analyseDocument). */
  private analysisOf(document: DocumentNode, config: Config, schema: GraphQLSchema | undefined): DocumentAnalysis {
    const known = this.analyses.get(document);
    if (known && known.config === config && known.schema === schema) return known;
    const analysis = analyseDocument(document, config, schema);
    this.analyses.set(document, analysis);
    return analysis;
  }

  /**
   * A purge written with empty argument parentheses (`_purgeTodo()`, as Stellate's docs write it) is
   * a GraphQL syntax error. With a valid purge token, the text without them (withoutEmptyPurgeParentheses)
   * is answered when it is a purge mutation; anything else keeps `syntaxError`, so no other
   * document is read differently (docs/graphql-caching.md, Purge API).
   */
  private async emptyParenthesesPurge(context: RequestContext, syntaxError: Verdict, schema: GraphQLSchema | undefined): Promise<Verdict | undefined> {
    const { config, head, resolved, request } = context;
    if (syntaxError.kind !== 'pass' || syntaxError.reason !== 'syntax-error' || schema === undefined) return undefined;
    if (resolved.query === undefined || !hasValidPurgeToken(head.headers, config.purge)) return undefined;
    const query = withoutEmptyPurgeParentheses(resolved.query);
    if (query === undefined) return undefined;
    const checked = checkLimits({ ...resolved, query }, config.limits, request.params.operationName, (document) =>
      this.analysisOf(document, config, schema),
    );
    if (isVerdict(checked) || checked.selected.operation.operation !== OperationTypeNode.MUTATION) return undefined;
    return this.purge(context, checked, schema);
  }

  /** The purge API's answer when the request is a purge (docs/graphql-caching.md, Purge API). */
  private async purge(context: RequestContext, checked: CheckedOperation, schema: GraphQLSchema): Promise<Verdict | undefined> {
    const { head, config, request } = context;
    const response = await handlePurgeRequest(
      {
        document: checked.selected.document,
        operation: checked.selected.operation,
        // The name of the operation chosen: an empty operationName that named none here (requestStages.ts, operationToRun).
        operationName: checked.selected.name === '' ? undefined : checked.selected.name,
        variables: request.params.variables,
        headers: head.headers,
        responseMediaType: ownAnswerMediaType(headerValue(head.headers, 'accept')),
      },
      { originSchema: schema, config, store: this.deps.store, logger: this.deps.logger, refusals: this.purgeRefusals, onPurge: (event) => this.report((events) => events.purge(event)) },
    );
    return response && { kind: 'respond', outcome: 'PASS', passReason: 'purge', response };
  }

  private forwardMutation(context: RequestContext, checked: CheckedOperation, schema: GraphQLSchema): RequestDecision {
    const plan = mutationPlan(checked.selected.document, context.config, schema);
    return this.forward(context, plan, originQueryOf(plan.prepared, checked.selected));
  }

  /** Scope and key, then a HIT from the store or a fetch whose answer may be stored. */
  private async decideQuery(context: RequestContext, checked: CheckedOperation, schema: GraphQLSchema, policy: CachePolicy): Promise<RequestDecision> {
    const { exchange, head, config, request } = context;
    // A JWT scope's token is verified before the key exists: a failed one never reaches a bucket.
    const pending = this.jwtScopes.identify(policy.scopes, config.scopes, head.headers);
    const identified = pending instanceof Promise ? await pending : pending;
    if (identified.kind === 'refused') return this.passOn(exchange, identified.failure, identified.detail, context);
    const { target } = request;
    const scoped = scopeAndKey(policy, checked.selected, request, schema, target, head.headers, config, this.deps.scopeKeySecret, identified.identities);
    // What a MISS forwards is worked out while Redis answers the lookup, when it is not answered at
    // once: for a document not seen before that is about 40 µs off the MISS's path (README,
    // Performance: What a MISS adds). A HIT from Redis pays it once per document this process has
    // not prepared. An error here is left for the MISS's own call below, inside guarded(), as before.
    let prepared: PreparedOperation | undefined;
    const prepare = (): PreparedOperation => (prepared ??= prepareOperation(schema, checked.selected.document, config.keyFields, listArgumentIndex(schema, config.listArguments, config.keyFields)));
    const prepareMeanwhile = (): void => {
      try {
        prepare();
      } catch {
        // Thrown again by prepare() when the lookup misses.
      }
    };
    const found = await lookupOrCoalesce(scoped.key, {
      store: this.deps.store,
      coalescer: this.coalescer,
      now: this.now,
      coalesceWaitMs: config.cache.coalesceWaitMs,
      ruleSwr: policy.swr,
      onCoalesced: () => this.report((events) => events.coalesced()),
      meanwhile: prepareMeanwhile,
    });
    if (found.kind === 'unavailable') {
      this.storeWarnings.lookup.warn({ err: found.error });
      return this.passOn(exchange, 'store-unavailable', undefined, context);
    }
    if (exchange.explanation) exchange.explanation = scopeExplanation(policy, scoped.bucket, config);
    if (found.kind === 'hit') {
      // The entry is the origin's answer with data to this very query.
      if (exchange.registration) await this.registerPersistedQuery(exchange);
      return this.answerFromCache(context, found.entry, scoped.scopeHeaders);
    }
    exchange.lead(found.leadership);
    // RFC 9111 section 5.2.1.5: no answer to it may be stored; a stored one may still answer it
    // (above), so sending no-store does not take a client past the cache.
    if (requestForbidsStoring(head.headers)) return this.passOn(exchange, 'request-no-store', undefined, context);
    exchange.staleHold = this.holdForOriginFailure(context, found.expired, { key: scoped.key, staleIfError: policy.staleIfError, scopeHeaders: scoped.scopeHeaders });
    const plan: StorePlan = {
      kind: 'store',
      key: scoped.key,
      bucket: scoped.bucket,
      operationName: checked.selected.name,
      variables: request.params.variables,
      mark: found.mark,
      policy,
      schema,
      prepared: prepare(),
      scopeHeaders: scoped.scopeHeaders,
      keyedRequestHeaders: keyedRequestHeaders(policy, config),
      limits: { maxResponseBodyBytes: config.limits.maxResponseBodyBytes, ignoreOriginCacheControl: config.cache.ignoreOriginCacheControl },
    };
    return this.forward(context, plan, originQueryOf(plan.prepared, checked.selected));
  }

  /**
   * A HIT in a type and content coding the client accepts, else the origin negotiates (README, HIT,
   * MISS, PASS): the stored bytes as they are when the client accepts their coding, else decompressed.
   */
  private answerFromCache(context: RequestContext, entry: CachedResponse, scopeHeaders: Array<[string, string]>): RequestDecision {
    const { exchange } = context;
    const replay = replayFor(context.head, exchange.explanation, entry, scopeHeaders);
    if (replay === undefined) return this.passOn(exchange, 'not-acceptable', `${entry.contentType}; ${entry.encoding}`, context);
    let response = hitResponse(replay.entry, this.now(), replay.overrides, replay.served);
    // The store left room for a HIT's own headers, not for a svc-debug explanation (headerRoom.ts).
    if (exchange.explanation && !immediateFits(response.headers)) {
      response = hitResponse(replay.entry, this.now(), replay.overrides.filter(([name]) => !name.startsWith('svc-debug-')), replay.served);
    }
    const preconditions = preconditionVerdict(context.head.method, context.head.headers, response.headers);
    if (preconditions === 'for-the-origin') return this.passOn(exchange, 'precondition', undefined, context);
    if (preconditions === 'not-modified') response = notModifiedResponse(response);
    exchange.settle('HIT', { servedBytes: response.body.length });
    return { kind: 'respond', response };
  }

  /**
   * Where to read the expired entry a MISS found again, kept on the exchange for an origin that
   * fails, when the rules give it a staleIfError window it is still in and the client accepts its
   * type (README, Stale-if-error).
   */
  private holdForOriginFailure(context: RequestContext, expired: CachedResponse | undefined, hold: StaleHold): StaleHold | undefined {
    if (expired === undefined || !withinStaleIfError(expired, hold.staleIfError, this.now())) return undefined;
    // Only whether the client could take it: the answer itself is built when the origin fails.
    return negotiatedFor(context.head, expired) === undefined ? undefined : hold;
  }

  /**
   * The held entry in place of a failed origin answer. It is read again first: the origin may have
   * taken its whole timeout, and after a purge answered true nothing purged is served (README,
   * Purge API), so only an entry still stored and still in its window answers, else the failure is
   * relayed. A soft-purged entry is still stored, and a newer one stored meanwhile serves as well.
   */
  private async answerStale(exchange: Exchange, failure: OriginFailure, originStatus: number): Promise<HttpResponse | undefined> {
    const hold = exchange.staleHold;
    exchange.staleHold = undefined;
    if (hold === undefined) return undefined;
    const replay = await this.readAgainForStale(exchange, hold);
    if (replay === undefined) return undefined;
    const now = this.now();
    const response = staleResponse(replay, now);
    exchange.settle('HIT', { servedBytes: response.body.length });
    this.deps.logger.info({ staleIfError: failure, originStatus, ageSeconds: Math.floor((now - replay.entry.storedAt) / 1000) }, 'origin failed; answered with the stale entry');
    this.report((events) => events.staleIfError(failure));
    return response;
  }

  /** The held key's entry as this request is answered with it, when it is still stored and in its window; a store error relays the failure. */
  private async readAgainForStale(exchange: Exchange, hold: StaleHold): Promise<Replay | undefined> {
    let entry: CachedResponse | undefined;
    try {
      entry = (await this.deps.store.lookup(hold.key)).entry;
    } catch (error) {
      this.storeWarnings.stale.warn({ err: errorMessage(error) });
      return undefined;
    }
    if (entry === undefined || !withinStaleIfError(entry, hold.staleIfError, this.now())) return undefined;
    return replayFor(requestHeadOf(exchange), exchange.explanation, entry, hold.scopeHeaders);
  }

  /**
   * The request goes on to the origin under `plan`, rewritten when svc-cache expanded a persisted
   * query or added fields (`originQuery`): the origin always gets the full query text, so it needs
   * no APQ support of its own.
   */
  private forward(context: RequestContext, plan: ResponsePlan, originQuery?: string): RequestDecision {
    const { exchange, head, config } = context;
    const origin = originRequestOf(context, originQuery);
    // A path the rewrite made no longer than the client's fits where that one did (an `id` left out).
    const pathBytes = origin.path === undefined ? 0 : Buffer.byteLength(origin.path);
    if (pathBytes > this.deps.maxRewrittenPathBytes && pathBytes > Buffer.byteLength(head.path)) return this.refuseLongPath(context);
    // Identity bodies are what the cache reads and replays (Envoy can compress in front).
    const remove = plan.kind === 'pass' ? tokenRemoval(head, config) : [...tokenRemoval(head, config), 'accept-encoding', ...validatorsWithheld(plan, head)];
    const requestHeaders = fittedRequestChanges(head.headers, { set: origin.path === undefined ? [] : [[':path', origin.path]], remove }, origin.body);
    if (requestHeaders === undefined) return this.forwardOverLimits(context, plan, dropsIdBeside(context.request, context.resolved, config));
    this.forwardUnder(exchange, plan);
    return { kind: 'forward', requestHeaders, ...(origin.body === undefined ? {} : { requestBody: origin.body }) };
  }

  /**
   * A request whose headers leave no room under Envoy's limits for svc-cache's changes
   * (fittedRequestChanges), which would get Envoy's 500: it goes on unchanged. A query passes
   * (`request-headers-too-large`); a mutation keeps its plan, and its answer, without the key fields
   * svc-cache adds and maybe in an encoding it cannot read, invalidates by type or by its root fields'
   * types (broader, never narrower). Two changes cannot be dropped, and the request is answered 431
   * instead, as Envoy answers headers over its limits: the purge token must not reach the origin,
   * and an `id` beside a document svc-cache read (`withoutId`) would make a Hot Chocolate origin run
   * the document it kept under that id, which svc-cache never saw (dropsIdBeside).
   */
  private forwardOverLimits(context: Pick<RequestContext, 'exchange' | 'head' | 'config'>, plan: ResponsePlan, withoutId: boolean): RequestDecision {
    const { exchange, head, config } = context;
    if (withoutId || tokenRemoval(head, config).length > 0) return this.conclude(exchange, REQUEST_HEADERS_TOO_LARGE);
    this.forwardUnder(exchange, plan.kind === 'store' ? { kind: 'pass', reason: 'request-headers-too-large' } : plan);
    return { kind: 'forward', requestHeaders: { set: [], remove: [] } };
  }

  /** The request goes on under `plan`, owing what a mutation owes if no response comes (invalidationWithoutResponse). */
  private forwardUnder(exchange: Exchange, plan: ResponsePlan): void {
    exchange.forward(plan);
    exchange.oweWithoutResponse(this.invalidationWithoutResponse(plan));
  }

  /** The request goes on under `plan` as it came, but for the purge token. */
  private forwardUntouched(exchange: Exchange, plan: PassPlan): RequestDecision {
    this.forwardUnder(exchange, plan);
    return { kind: 'forward', requestHeaders: { set: [], remove: exchange.tokenHeader === undefined ? [] : [exchange.tokenHeader] } };
  }

  /**
   * Envoy answers 500 when a mutation leaves the request headers over its limit, whatever
   * failure_mode_allow says (docs/ext-proc.md, Header mutations): a GET grown that long is not rewritten.
   */
  private refuseLongPath(context: RequestContext): RequestDecision {
    const { exchange, request } = context;
    exchange.releaseLeadership();
    if (exchange.explanation) exchange.explanation = {};
    if (request.params.query === undefined) {
      // The hash came alone: Apollo clients then resend the query over POST.
      this.report((events) => events.persistedQuery('not-found'));
      return this.conclude(exchange, { kind: 'respond', outcome: 'ERROR', errorCode: 'PERSISTED_QUERY_NOT_FOUND', response: persistedQueryNotFound() });
    }
    return this.passOn(exchange, 'rewritten-path-too-long');
  }

  /**
   * An early verdict carried out: an answer now, or a pass (rewritten for the origin when `context`
   * says so). Every answer svc-cache writes itself but a HIT passes here, and gets here its media
   * type (README, Errors svc-cache answers itself).
   */
  private conclude(exchange: Exchange, verdict: Verdict, context?: RequestContext): RequestDecision {
    if (verdict.kind === 'pass') return this.passOn(exchange, verdict.reason, verdict.detail, context);
    if (verdict.outcome === 'ERROR') exchange.settle('ERROR', { errorCode: verdict.errorCode });
    else exchange.settle('PASS', { passReason: verdict.passReason });
    const response = inOwnMediaType(verdict.response, requestHeadOf(exchange));
    // A purge is a PASS answered here: explained as one forwarded is (an outside audit found no reason on it).
    const explained = verdict.outcome === 'PASS' ? explanationHeaders(exchange.explanation, verdict.passReason) : [];
    return { kind: 'respond', response: explained.length === 0 ? response : { ...response, headers: [...response.headers, ...explained] } };
  }

  /**
   * A request svc-cache cannot read goes on untouched, but the origin may read it another way and
   * run a mutation (README, Bad input): any mutation a reading finds invalidates its root fields'
   * types once the origin answered, as an answer svc-cache cannot read does.
   */
  private passUnread(exchange: Exchange, reason: PassReason, detail: string, body: Buffer, { foundOnly = false }: { foundOnly?: boolean } = {}): RequestDecision {
    const { config, schema } = this.deps.state();
    const head = requestHeadOf(exchange);
    if (head.method === 'GET') return this.passUnreadGet(exchange, reason, detail, foundOnly);
    if (head.method !== 'POST' || !schema || config.mutationPolicy === 'None') return this.passOn(exchange, reason, detail);
    const possible = possibleMutations(head, body, config.limits);
    // Another route's request (readsFoundMutationsOnly) is no one's to refuse.
    if (isVerdict(possible)) return foundOnly ? this.passOn(exchange, reason, detail) : this.conclude(exchange, possible);
    const { mutations } = possible;
    const unseen = possible.unseen && !foundOnly;
    if (mutations.length === 0 && !unseen) return this.passOn(exchange, reason, detail);
    this.deps.logger.debug({ passReason: reason, detail, mutations: mutations.reduce((count, each) => count + each.operations.length, 0), unseen }, 'request passed; it may run mutations');
    const types = mutations.map(({ document, operations }) => operationsRootFieldTypes(schema, config.keyFields, operations, fragmentsOf(document)));
    const tags = [...new Set(types.flatMap((each) => each.tags))];
    const ofKnownFields = [...new Set(types.flatMap((each) => each.ofKnownFields))];
    const unread = mutations.length === 0 ? undefined : { policy: config.mutationPolicy, tags, ofKnownFields };
    return this.forwardUntouched(exchange, { kind: 'pass', reason, unread, ...(unseen ? { unseen: { maxResponseBodyBytes: config.limits.maxResponseBodyBytes } } : {}) });
  }

  /**
   * A GET whose URL some origin reads as a mutation is refused as a readable one would be (405), and
   * one whose reading is ambiguous or over the limits as a readable one would be (400), but for
   * `foundOnly` (another route's GET), which then goes on.
   */
  private passUnreadGet(exchange: Exchange, reason: PassReason, detail: string, foundOnly: boolean): RequestDecision {
    const { config } = this.deps.state();
    const possible = possibleMutations(requestHeadOf(exchange), NO_BODY, config.limits);
    if (isVerdict(possible)) return foundOnly ? this.passOn(exchange, reason, detail) : this.conclude(exchange, possible);
    if (possible.mutations.length > 0) return this.conclude(exchange, mutationOverGet());
    return this.passOn(exchange, reason, detail);
  }

  /**
   * A POST that names no query, or whose query does not parse, may still run one at the origin: a
   * stored document sent by its id (`documentId`, Relay's `doc_id`, or the id in `query` as
   * envelop's persisted operations take it), which svc-cache cannot see. It may be a mutation, so an
   * answer showing that an operation ran empties the store (README, Invalidation after mutations:
   * `ranUnseenMutation`).
   */
  private passUnseen(exchange: Exchange, config: Config, verdict: Verdict & { kind: 'pass' }, context?: RequestContext): RequestDecision {
    const { reason, detail } = verdict;
    if (requestHeadOf(exchange).method !== 'POST' || config.mutationPolicy === 'None') return this.passOn(exchange, reason, detail, context);
    this.deps.logger.debug(
      { passReason: reason, ...(detail === undefined ? {} : { detail: shortened(detail, LOGGED_DETAIL_CHARACTERS) }) },
      'request passed; it may run an operation svc-cache cannot see',
    );
    const plan: PassPlan = { kind: 'pass', reason, unseen: { maxResponseBodyBytes: config.limits.maxResponseBodyBytes } };
    // With a context, as the origin must get it: an APQ hash expanded to its text (an outside audit
    // saw the hash of a document with a mutation and no operation named reach the origin alone).
    return context ? this.forward(context, plan) : this.forwardUntouched(exchange, plan);
  }

  /**
   * The request goes on to the origin untouched but for the purge token, and is not stored. The
   * detail can quote the client (`no operation named "…"`, a syntax error's token): it is logged
   * cut to LOGGED_DETAIL_CHARACTERS, as the dashboard cuts names (README, Dashboard).
   */
  private passOn(exchange: Exchange, reason: PassReason, detail?: string, context?: RequestContext): RequestDecision {
    this.deps.logger.debug({ passReason: reason, ...(detail === undefined ? {} : { detail: shortened(detail, LOGGED_DETAIL_CHARACTERS) }) }, 'request passed');
    if (context) return this.forward(context, { kind: 'pass', reason });
    return this.forwardUntouched(exchange, { kind: 'pass', reason });
  }

  private async decideResponseHead(exchange: Exchange, status: number, headers: HeaderList, endOfStream: boolean): Promise<ResponseHeadDecision> {
    if (exchange.plan === undefined) {
      // An Envoy local reply made before the request phase reached us, or instead of the body it
      // was buffering (docs/ext-proc.md, Local replies).
      exchange.explanation = undefined;
    }
    const forwarded = exchange.plan ?? { kind: 'pass', reason: 'envoy-local-reply' };
    const plan = planAfterResponseHead(forwarded, status, headers, endOfStream, this.now());
    exchange.responseArrived(headers, plan);
    // Set before anything is awaited: Envoy may end the stream while this head is being decided.
    exchange.whenBodyLost = this.invalidationWithoutBody(plan);
    // A failure shown by the head is never stored, so the plan is a pass and leadership is released.
    const replacement = await this.replaceFailureByHead(exchange, status, headers, endOfStream);
    if (replacement) {
      exchange.whenBodyLost = undefined;
      exchange.registration = undefined;
      return { headers: { set: [], remove: [] }, wantsBody: false, replacement };
    }
    // A mutation whose answer will not be read (streamed, not GraphQL JSON, encoded, bodiless).
    if (forwarded.kind === 'mutation' && plan.kind !== 'mutation') await this.invalidateByRootFieldTypes(forwarded);
    if (forwarded.kind === 'pass' && forwarded.unread) await this.invalidate(forwarded.unread.policy, forwarded.unread.tags, 'root-field-types');
    // An answer svc-cache will not read cannot show that nothing ran (nor can one it means to read
    // that never comes: whenBodyLost).
    if (forwarded.kind === 'pass' && forwarded.unseen && plan.kind === 'pass' && !plan.readUnseen && isSuccess(status)) await this.invalidateEverything('unseen-operation');
    if (forwarded.kind === 'batch' && plan.kind !== 'batch') await this.invalidateAfterBatch({ ...forwarded, unseen: isSuccess(status) ? forwarded.unseen : [] }, undefined);
    const { maxResponseBodyBytes } = this.deps.state().config.limits;
    const holdable = isHoldable(headers, endOfStream, maxResponseBodyBytes);
    if (status !== 200 || !holdable || !isReadable(headers)) exchange.registration = undefined;
    // An answer too large to hold is no failure a stale entry answers for (README, Stale-if-error).
    if (!holdable) exchange.staleHold = undefined;
    const wantsBody =
      wantsResponseBody(plan, headers, endOfStream, maxResponseBodyBytes) || exchange.registration !== undefined || exchange.staleHold !== undefined;
    // A body svc-cache holds gets its headers with the body's answer, counted there against the
    // origin's alone (fitted): set here too, they would be in Envoy's map uncounted.
    if (wantsBody || plan.kind === 'store') return { headers: { set: [], remove: [] }, wantsBody };
    const reason = plan.kind === 'pass' ? plan.reason : plan.kind;
    exchange.settle('PASS', { passReason: reason });
    return { headers: cacheStatusHeader('PASS', explanationHeaders(exchange.explanation, reason)), wantsBody };
  }

  /**
   * A held stale entry answers for an origin whose head already shows the failure; one whose body
   * must tell keeps it held (`responseBody`), and any other answer lets it go (README, Stale-if-error).
   */
  private async replaceFailureByHead(exchange: Exchange, status: number, headers: HeaderList, endOfStream: boolean): Promise<HttpResponse | undefined> {
    if (exchange.staleHold === undefined) return undefined;
    const failure = failureByHead(status, headers, endOfStream);
    if (failure === 'read-body') return undefined;
    if (failure === undefined) {
      exchange.staleHold = undefined;
      return undefined;
    }
    return this.answerStale(exchange, failure, status);
  }

  private async decideResponseBody(exchange: Exchange, plan: ResponsePlan, body: Buffer): Promise<ResponseBodyDecision> {
    // Held only when the head was a 200 of GraphQL JSON: the body tells whether it is a result.
    if (exchange.staleHold && !isGraphQLResult(body)) {
      const replacement = await this.answerStale(exchange, 'origin-not-graphql', 200);
      if (replacement) return { headers: { set: [], remove: [] }, replacement };
    }
    exchange.staleHold = undefined;
    exchange.whenBodyLost = undefined;
    if (exchange.registration && isPlainObject(parseGraphQLResult(body)?.data)) await this.registerPersistedQuery(exchange);
    switch (plan.kind) {
      case 'pass': {
        if (plan.readUnseen && ranUnseenMutation(parseGraphQLResult(body))) await this.invalidateEverything('unseen-operation');
        const passed = passedBody(plan, exchange.responseHeaders, body, this.deps.state().config.limits.maxResponseBodyBytes);
        const response = this.passedResponse(exchange, plan.reason, passed.body, body);
        // Cut from a decoded body, the answer goes as identity (stream.ts sets its content-length).
        return passed.decoded ? { ...response, headers: joinedChanges(response.headers, { set: [], remove: ['content-encoding'] }) } : response;
      }
      case 'mutation':
        await this.invalidateAfterMutation(plan, body);
        return this.passedResponse(exchange, 'mutation', stripAddedFields(plan.prepared, body), body);
      case 'batch':
        await this.invalidateAfterBatch(plan, body);
        await this.registerFromBatch(exchange, plan, body);
        return this.passedResponse(exchange, 'batch', body, body);
      case 'store':
        return this.storeResponse(exchange, plan, body);
    }
  }

  /**
   * What a plan reads the origin's answer for that must happen even when the answer never reaches
   * svc-cache (Envoy resets the stream, or answers itself for a body over its buffer): the origin
   * ran the request all the same. A mutation then invalidates by its root fields' types, as for an
   * answer svc-cache cannot read, and an operation svc-cache cannot see empties the store.
   */
  private invalidationWithoutBody(plan: ResponsePlan): (() => void) | undefined {
    const invalidation = this.invalidationOwed(plan);
    if (invalidation === undefined) return undefined;
    return () => {
      invalidation().catch((error: unknown) => this.deps.logger.error({ err: errorMessage(error) }, 'invalidation for an answer that never came failed'));
    };
  }

  /**
   * What a request forwarded under `plan` owes when no response phase comes: Envoy answered it
   * itself (its route timeout's 504, an upstream reset's 503: docs/ext-proc.md, Local replies skip
   * ext_proc) or the client went away, after the origin may have run a mutation. As for a 5xx without
   * `data` (README, Answers with errors), the root fields' types are invalidated; an operation
   * svc-cache cannot see flushes nothing, as under a 5xx.
   */
  private invalidationWithoutResponse(plan: ResponsePlan): (() => void) | undefined {
    const owed = rootFieldTypesOwed(plan);
    if (owed === undefined) return undefined;
    return () => {
      this.lateInvalidations.add(owed.tags);
      this.invalidate(owed.policy, owed.tags, 'root-field-types').catch((error: unknown) =>
        this.deps.logger.error({ err: errorMessage(error) }, 'invalidation for a request answered by Envoy failed'),
      );
    };
  }

  private invalidationOwed(plan: ResponsePlan): (() => Promise<void>) | undefined {
    if (plan.kind === 'mutation') return () => this.invalidateByRootFieldTypes(plan);
    if (plan.kind === 'batch') return () => this.invalidateAfterBatch(plan, undefined);
    if (plan.kind === 'pass' && plan.readUnseen) return () => this.invalidateEverything('unseen-operation');
    return undefined;
  }

  private passedResponse(exchange: Exchange, reason: PassReason, clientBody: Buffer, originBody: Buffer): ResponseBodyDecision {
    exchange.settle('PASS', { passReason: reason });
    const status = cacheStatusHeader('PASS', explanationHeaders(exchange.explanation, reason));
    return { ...withBody(clientBody, originBody), headers: joinedChanges(status, ...bodyChanges(exchange.responseHeaders, clientBody, originBody)) };
  }

  private async storeResponse(exchange: Exchange, plan: StorePlan, body: Buffer): Promise<ResponseBodyDecision> {
    const headers = exchange.responseHeaders;
    const notStored = (reason: PassReason): ResponseBodyDecision => {
      this.deps.logger.debug({ passReason: reason }, 'response not stored');
      return this.passedResponse(exchange, reason, stripAddedFields(plan.prepared, body), body);
    };
    const storable = entryToStore(plan, headers, body, this.now());
    if ('reason' in storable) return notStored(storable.reason);
    const clientBody = storable.entry.body;
    // Compressed once, here, so that a HIT replays the stored bytes (README, Performance); never
    // an answer whose origin forbids changing it (`no-transform`).
    const compression = forbidsTransform(headers) ? NO_COMPRESSION : this.deps.state().config.cache.compression;
    const entry = { ...storable.entry, ...(await compressBody(clientBody, compression)) };
    if (!hitFitsEnvoyLimits(entry, plan.scopeHeaders)) return notStored('response-headers-too-large');
    try {
      const stored = await this.deps.store.store(plan.key, entry, { tags: storable.tags, ttlSeconds: storable.ttlSeconds, mark: plan.mark });
      if (!stored) return notStored('invalidated-meanwhile');
    } catch (error) {
      this.storeWarnings.store.warn({ err: errorMessage(error) });
      return notStored('store-unavailable');
    }
    exchange.settle('MISS');
    const added = [...mergeScopeHeaders(headers, plan.scopeHeaders), ...explanationHeaders(exchange.explanation)];
    const scoped = scopesTheAnswer(plan.scopeHeaders) ? [withoutSharedCacheGrants(headers)] : [];
    return { ...withBody(clientBody, body), headers: joinedChanges(cacheStatusHeader('MISS', added), ...bodyChanges(headers, clientBody, body), ...scoped) };
  }

  /**
   * Invalidates what the mutation's answer says it changed, before the client hears back, so the
   * client's next query misses. A failure is logged and counted, never silent; the client still gets
   * the origin's answer, since the mutation itself went through (docs/graphql-caching.md, Invalidation).
   */
  private async invalidateAfterMutation(plan: MutationPlan, body: Buffer): Promise<void> {
    const result = body.length > plan.maxResponseBodyBytes ? undefined : parseGraphQLResult(body);
    const ran = result && whatRan(result, plan);
    if (ran === 'nothing') return;
    if (!result || ran === 'unknown') return this.invalidateByRootFieldTypes(plan);
    await this.invalidate(plan.policy, mutationInvalidationTags(plan.schema, plan.prepared, result, plan.policy), 'answer');
  }

  /** An answer svc-cache cannot read still names no less than its root fields' types (`Type`). */
  private async invalidateByRootFieldTypes(plan: MutationPlan): Promise<void> {
    if (plan.policy === 'None') return;
    await this.invalidate(plan.policy, rootFieldTypeTags(plan.schema, plan.prepared), 'root-field-types');
  }

  /**
   * Each mutation of a batch invalidates from its own answer, read against its own operation; one
   * whose answer cannot be read (no body, not an array of as many answers, over the size limit)
   * invalidates its root fields' types.
   */
  private async invalidateAfterBatch(plan: BatchPlan, body: Buffer | undefined): Promise<void> {
    const readable = body !== undefined && body.length <= plan.maxResponseBodyBytes;
    const answers = readable ? parseBatchResults(body, plan.mutations.length) : undefined;
    const fromAnswers = new Set<string>();
    const fromRootFields = new Set<string>();
    let policy: MutationPolicy | undefined;
    plan.mutations.forEach((mutation, index) => {
      if (!mutation) return;
      policy = mutation.policy;
      const answer = answers?.[index];
      const ran = isPlainObject(answer) ? whatRan(answer, plan) : 'unknown';
      if (ran === 'unknown') for (const tag of rootFieldTypeTags(mutation.schema, mutation.prepared)) fromRootFields.add(tag);
      else if (ran === 'has-data' && isPlainObject(answer)) {
        // One budget for the batch: a hundred mutations may not name a hundred times as many objects.
        const budget = MAX_INVALIDATED_ENTITIES - fromAnswers.size;
        for (const tag of mutationInvalidationTags(mutation.schema, mutation.prepared, answer, mutation.policy, budget)) fromAnswers.add(tag);
      }
    });
    if (plan.unseen.some((index) => answers === undefined || ranUnseenMutation(answers[index]))) await this.invalidateEverything('unseen-operation');
    if (policy === undefined) return;
    await this.invalidate(policy, [...fromAnswers], 'answer');
    await this.invalidate(policy, [...fromRootFields], 'root-field-types');
  }

  /**
   * Applies an invalidation, of tags or of everything; one the store fails is retried
   * (PendingInvalidations), since the mutation itself went through.
   */
  private async invalidate(policy: MutationPolicy, what: string[] | 'everything', from: InvalidationSource): Promise<void> {
    if (what !== 'everything' && what.length === 0) return;
    const tags = what === 'everything' ? 0 : what.length;
    try {
      const removedEntries = await this.applyInvalidation(what);
      const message = what === 'everything' ? 'invalidated everything after an operation svc-cache cannot see' : 'invalidated after mutation';
      this.deps.logger.info({ policy, from, tags, removedEntries }, message);
      this.report((events) => events.invalidation({ policy, from, tags, removedEntries }));
    } catch (error) {
      // Applied but unconfirmed by a replica, it would not be applied better by a retry.
      const retried = !(error instanceof UnconfirmedInvalidation);
      this.deps.logger.error({ policy, from, tags, retried, err: errorMessage(error) }, 'invalidation after mutation failed');
      this.report((events) => events.invalidation({ policy, from, failed: errorMessage(error) }));
      if (retried) this.pendingInvalidations.add(what);
    }
  }

  /**
   * Empties the store, for what svc-cache cannot tell apart. One flush runs at a time, and at most one
   * waits behind it, shared by every request that asks meanwhile: it starts after they asked, so it
   * covers what they changed, and many such requests cost the store two flushes, not one each.
   */
  private invalidateEverything(from: InvalidationSource): Promise<void> {
    if (this.queuedFlush) return this.queuedFlush;
    if (this.runningFlush === undefined) return this.startFlush(from);
    const queued = this.runningFlush.then(() => {
      this.queuedFlush = undefined;
      return this.startFlush(from);
    });
    this.queuedFlush = queued;
    return queued;
  }

  private startFlush(from: InvalidationSource): Promise<void> {
    const flush = this.flushOnce(from).finally(() => {
      if (this.runningFlush === flush) this.runningFlush = undefined;
    });
    this.runningFlush = flush;
    return flush;
  }

  private applyInvalidation(what: readonly string[] | 'everything'): Promise<number> {
    return what === 'everything' ? this.deps.store.invalidateAll() : this.deps.store.invalidate(what);
  }

  /** Never rejects: a failure is retried as any invalidation is. */
  private flushOnce(from: InvalidationSource): Promise<void> {
    return this.invalidate(this.deps.state().config.mutationPolicy, 'everything', from);
  }

  /**
   * A failed invalidation applied again; counted as one that succeeded once it does, and only
   * logged when a replica did not confirm it. Throws while the store still fails.
   */
  private async retryInvalidation(what: readonly string[] | 'everything'): Promise<void> {
    const policy = this.deps.state().config.mutationPolicy;
    const tags = what === 'everything' ? 0 : what.length;
    let removedEntries: number;
    try {
      removedEntries = await this.applyInvalidation(what);
    } catch (error) {
      if (!(error instanceof UnconfirmedInvalidation)) throw error;
      this.deps.logger.warn({ policy, from: 'retry', tags, err: error.message }, 'invalidated after mutation, on retry; a replica did not confirm it');
      return;
    }
    this.deps.logger.info({ policy, from: 'retry', tags, removedEntries }, 'invalidated after mutation, on retry');
    this.report((events) => events.invalidation({ policy, from: 'retry', tags, removedEntries }));
  }

  /**
   * Registers the APQ hashes a batch's operations sent with their text, each once its own answer in
   * a 200's array shows data, as for a single request: Apollo's persisted-query link then batches
   * hashes alone, which svc-cache expands for an origin without APQ (originChangesOf).
   */
  private async registerFromBatch(exchange: Exchange, plan: BatchPlan, body: Buffer): Promise<void> {
    const { registrations } = plan;
    if (registrations === undefined || headerValue(exchange.responseHeaders, ':status') !== '200' || body.length > plan.maxResponseBodyBytes) return;
    const answers = parseBatchResults(body, registrations.length);
    for (const [index, registration] of registrations.entries()) {
      const answer = answers?.[index];
      if (registration !== undefined && isPlainObject(answer) && isPlainObject(answer.data)) await this.register(registration);
    }
  }

  private async registerPersistedQuery(exchange: Exchange): Promise<void> {
    const { registration } = exchange;
    exchange.registration = undefined;
    if (registration) await this.register(registration);
  }

  private async register(registration: PersistedQueryRegistration): Promise<void> {
    const { config } = this.deps.state();
    const registered = await registerPersistedQuery(registration, { apq: config.apq, registry: this.deps.persistedQueries, warnings: this.apqWarnings });
    if (registered) this.report((events) => events.persistedQuery('registered'));
  }

  /** Metrics must never cost a client its answer. */
  private report(emit: (events: EngineEvents) => void): void {
    if (!this.deps.events) return;
    try {
      emit(this.deps.events);
    } catch (error) {
      this.deps.logger.error({ err: errorMessage(error) }, 'reporting an engine event failed');
    }
  }
}

/**
 * The client's validators, kept from the origin when its answer may be stored: an origin that
 * honours them would answer a 304, which cannot be stored, so a client that revalidates every time
 * (a reload, a scoped `no-cache` answer) would never fill the cache. The stored 200 then meets the
 * next conditional request itself (preconditionVerdict), as nginx and Varnish do.
 */
function validatorsWithheld(plan: ResponsePlan, head: RequestHead): string[] {
  if (plan.kind !== 'store') return [];
  return VALIDATORS.filter((name) => headerValue(head.headers, name) !== undefined);
}

const VALIDATORS = ['if-none-match', 'if-modified-since'];

/** The changes the origin's headers need when the client gets other bytes than the origin sent (responses.ts, headersOfRewrittenBody). */
function bodyChanges(originHeaders: HeaderList, clientBody: Buffer, originBody: Buffer): HeaderChanges[] {
  return clientBody === originBody ? [] : [rewrittenBodyChanges(originHeaders)];
}

/** A stored entry as this request may be answered with it: in a type it accepts, with the scope and svc-debug headers. */
function replayFor(
  head: RequestHead,
  explanation: Explanation | undefined,
  entry: CachedResponse,
  scopeHeaders: Array<[string, string]>,
): Replay | undefined {
  const negotiated = negotiatedFor(head, entry);
  if (negotiated === undefined) return undefined;
  // The stored bytes as they are when the client accepts their coding, else decompressed.
  const served = negotiated.encoding === entry.encoding ? entry : { body: identityBodyOf(entry), encoding: 'identity' as const };
  const overrides = [...mergeScopeHeaders(entry.headers, scopeHeaders), ...explanationHeaders(explanation)];
  const headers = scopesTheAnswer(scopeHeaders) ? scopedEntryHeaders(entry.headers) : entry.headers;
  return { entry: { ...entry, headers, contentType: negotiated.contentType }, overrides, served };
}

/**
 * The content type and coding an entry is answered in for this request, or undefined when the
 * client accepts neither; when the origin said its answer varies on `Accept` and the client names a
 * streaming type, as that origin may answer this request with a stream; and for a GET that an
 * origin may answer with its IDE or landing page (mayAnswerWithHtml), not the stored JSON (README,
 * HIT, MISS, PASS).
 */
function negotiatedFor(head: RequestHead, entry: CachedResponse): HitNegotiation | undefined {
  const accept = headerValue(head.headers, 'accept');
  if (namesStreamingType(accept) && varyNames(entry.headers).includes('accept')) return undefined;
  if (head.method === 'GET' && mayAnswerWithHtml(accept)) return undefined;
  return hitNegotiation(accept, headerValue(head.headers, 'accept-encoding'), entry.contentType, entry.encoding);
}

function requestHeadOf(exchange: Exchange): RequestHead {
  if (!exchange.head) throw new Error('a request phase on an exchange without a request head');
  return exchange.head;
}

/**
 * The query text for the origin when svc-cache added fields to it, else undefined (send the
 * client's). A document with other operations beside the chosen one goes as the client wrote it:
 * the origin validates them all (README, Cache key), and its answer then lacks the key fields, so
 * an entity in it is named by its type (never more narrowly than it should be).
 */
function originQueryOf(prepared: PreparedOperation, selected: { wholeDocument: boolean }): string | undefined {
  return prepared.rewritten && selected.wholeDocument ? prepared.query : undefined;
}

/**
 * A query text beside a stored document's id (`documentId`, `doc_id`): Hot Chocolate runs the id's
 * document when it knows it, not the text, so what runs is not for svc-cache to say (README,
 * Operations svc-cache cannot see). Its `id` is left out instead (dropsIdBeside).
 */
function runsDocumentByIdInstead(operation: GraphQLOperation): boolean {
  return operation.params.query !== undefined && operation.namesDocumentId;
}

/**
 * The request as the origin gets it, where svc-cache changes it: a persisted query expanded (unless
 * the config forwards the reference), the text with added key fields, and the `id` beside a
 * document svc-cache read (dropsIdBeside). A stored document goes as its id, as sent: the origin may
 * run ids only (README, Stored documents sent by id), and its answer then lacks any key field
 * svc-cache would add.
 */
function originRequestOf(context: RequestContext, originQuery: string | undefined): { path?: string; body?: Buffer } {
  const { head, config, request, resolved } = context;
  const changes = originChangesOf(request, resolved, config, resolved.storedById ? undefined : originQuery);
  return changes === undefined ? {} : rewrittenForOrigin(request.method, head.path, request.body, changes);
}

/**
 * What svc-cache changes of one operation for the origin, undefined when it goes as sent: a
 * persisted query expanded (unless the config forwards the reference), the text with `addedFields`,
 * and the `id` beside a document svc-cache read left out (dropsIdBeside). A batch's operations get
 * no added fields: the origin gets the batch as sent but for these.
 */
function originChangesOf(operation: GraphQLOperation, resolved: ResolvedQuery, config: Config, addedFields?: string): OriginChanges | undefined {
  const expand = resolved.persisted && !config.apq.forwardPersistedQuery;
  const changesText = expand || addedFields !== undefined;
  const withoutId = dropsIdBeside(operation, resolved, config);
  if (!changesText && !withoutId) return undefined;
  return {
    query: changesText ? (addedFields ?? resolved.query!) : undefined,
    // A rewritten query no longer matches the client's hash; other extensions keep their text.
    withoutPersistedQuery: changesText && 'persistedQuery' in operation.params.extensions,
    withoutId,
  };
}

/**
 * Whether the origin gets the request without the `id` beside the document svc-cache read for it
 * (its text, or the one an APQ hash names). Hot Chocolate keeps each document it ran under the `id`
 * sent with it, and runs the kept one instead of any text or hash sent beside that `id` later: a
 * client could send a mutation with an `id`, then a query beside it, and have the mutation run where
 * svc-cache sees (and stores) the query. Without the `id` the origin runs what svc-cache read, as
 * every other origin does. The `id` stays only where each one sent names this very text in the
 * manifest: the origin runs the same either way, and one that runs ids only needs it. README,
 * Operations svc-cache cannot see.
 */
function dropsIdBeside(operation: GraphQLOperation, resolved: ResolvedQuery, config: Config): boolean {
  if (operation.idsSent.length === 0 || resolved.storedById || resolved.query === undefined) return false;
  const documents = config.persistedDocuments?.documents;
  return !operation.idsSent.every((id) => id !== null && documents?.get(id) === resolved.query);
}

/**
 * The root fields' types a forwarded request may have changed, and under which policy, when its
 * stream ended without an answer: of a mutation, of each mutation of a batch, of those found in a
 * body svc-cache could not read. Of the root fields svc-cache's schema has: one it lacks would name
 * every type queries hold, and any client could empty the store by sending one and going away, as
 * with an operation svc-cache cannot see (README, Answers with errors).
 */
function rootFieldTypesOwed(plan: ResponsePlan): { policy: MutationPolicy; tags: string[] } | undefined {
  const owed = (policy: MutationPolicy, tags: string[]) => (tags.length === 0 ? undefined : { policy, tags });
  if (plan.kind === 'mutation') return plan.policy === 'None' ? undefined : owed(plan.policy, rootFieldTypes(plan.schema, plan.prepared).ofKnownFields);
  if (plan.kind === 'batch') {
    const mutations = plan.mutations.filter((mutation): mutation is MutationPlan => mutation !== undefined && mutation.policy !== 'None');
    const first = mutations[0];
    if (first === undefined) return undefined;
    return owed(first.policy, [...new Set(mutations.flatMap((mutation) => rootFieldTypes(mutation.schema, mutation.prepared).ofKnownFields))]);
  }
  return plan.kind === 'pass' && plan.unread ? owed(plan.unread.policy, plan.unread.ofKnownFields) : undefined;
}

/** The purge token is for svc-cache alone and never reaches the origin. */
function tokenRemoval(head: RequestHead, config: Config): string[] {
  return carriesPurgeToken(head.headers, config.purge) ? [purgeTokenHeader(config.purge)] : [];
}

/**
 * Request headers an origin's `Vary` may name for its answer to be stored: those whose whole value
 * the key holds (the scopes' `header:` sources, `origin`), the bypass headers (a request that sends
 * one reads no entry, so every entry answers their absence), `accept` (a HIT is negotiated against the
 * client's Accept) and `accept-encoding` (svc-cache removes it from what the origin gets). Not
 * `content-type` or `content-length`: requests with different ones (JSON POSTs with and without a
 * charset, two spellings of one body) share a key.
 */
function keyedRequestHeaders(policy: CachePolicy, config: Config): ReadonlySet<string> {
  return new Set(['accept', 'accept-encoding', 'origin', ...config.cache.bypassCacheHeaders, ...scopeKeyedHeaders(policy.scopes, config.scopes)]);
}

/**
 * What a mutation names lists by: under `List`, the list-argument index (which, in `match` mode,
 * has the fields that name its objects' lists added); under other policies nothing (README,
 * Invalidation after mutations).
 */
/** How a mutation's answer will be read for invalidation, whether it came alone or in a batch. */
function mutationPlan(document: DocumentNode, config: Config, schema: GraphQLSchema): MutationPlan {
  const lists = config.mutationPolicy === 'List' ? listArgumentIndex(schema, config.listArguments, config.keyFields) : undefined;
  const prepared = prepareOperation(schema, document, config.keyFields, lists);
  return { kind: 'mutation', schema, prepared, policy: config.mutationPolicy, maxResponseBodyBytes: config.limits.maxResponseBodyBytes };
}

/**
 * `svc-debug: 1` explains the decision, but only to whoever holds a purge token: the headers show
 * the configuration (rules, scopes), which is not for every client to read.
 */
function explanationRequested(head: RequestHead, config: Config): boolean {
  return headerValue(head.headers, DEBUG_HEADER) === '1' && hasValidPurgeToken(head.headers, config.purge);
}

const DEBUG_HEADER = 'svc-debug';
const STORE_WARNING_INTERVAL_MS = 10_000;
/** Characters of a PASS's detail logged: enough for a message and a name as the dashboard shows it. */
const LOGGED_DETAIL_CHARACTERS = 200;
/** A request without a body; shared, as a buffer of no bytes cannot be changed (one allocated per GET was 0.5% of its CPU). */
const NO_BODY = Buffer.alloc(0);
/** Pass reasons of a POST whose operation the origin may run from a stored document (passUnseen). */
const UNSEEN_REASONS: ReadonlySet<PassReason> = new Set(['no-query', 'unknown-document-id', 'unread-document-id', 'syntax-error', 'stored-document-over-limits']);

/**
 * Whether a POST passed for `reason` may run an operation svc-cache cannot see (passUnseen): one
 * from a stored document, or, when the operation to run is unknown, any mutation of its document
 * (origins differ on what an unknown or empty operationName runs; Hot Chocolate's
 * `batchOperations` runs several).
 */
function runsUnseen(reason: PassReason, query: string | undefined): boolean {
  if (UNSEEN_REASONS.has(reason)) return true;
  return reason === 'unknown-operation' && query !== undefined && mayMutate(query);
}

/** Whether a text may run a mutation: it holds one, or does not parse (an origin may read it otherwise). */
function mayMutate(query: string): boolean {
  const parsed = parseDocument(query);
  return 'kind' in parsed || parsed.operations.some((operation) => operation.operation === OperationTypeNode.MUTATION);
}

/**
 * Whether a POST names Hot Chocolate's `batchOperations` in its URL (in any case, as ASP.NET Core
 * reads names): it then runs every operation of its document that the parameter names, however the
 * body reads and whatever `operationName` says (README, Operations svc-cache cannot see).
 */
function runsOperationBatch(path: string): boolean {
  const start = path.indexOf('?');
  return start >= 0 && hasUrlParameter(path.slice(start + 1), 'batchoperations');
}

/** Whether what a request sends may run a mutation: a text holding one, or anything svc-cache does not read as texts. */
function mayRunMutation(parameters: RequestParameters): boolean {
  const operations = parameters.kind === 'graphql' ? [parameters] : parameters.kind === 'batch' ? parameters.operations : undefined;
  return operations === undefined || operations.some(({ params }) => params.query === undefined || mayMutate(params.query));
}
/** Stored as the origin sent it. */
const NO_COMPRESSION: CompressionSettings = { encoding: 'identity', minBytes: 0 };

/**
 * Whether a path is routed to an endpoint only as one of many routes may be (`root`, `suffix`: a
 * login form at `/login?next=/graphql`, an upload beside a GraphQL server at `/`): its mutations a
 * reading finds invalidate, but what cannot be read there, or is over the limits, passes as
 * another route's request, neither refused nor emptying the store (README, Invalidation after
 * mutations).
 */
function readsFoundMutationsOnly(routing: EndpointRouting | undefined): boolean {
  return routing === 'root' || routing === 'suffix';
}

/**
 * The key's host and endpoint; only requests for a configured endpoint get this far. The host is
 * `:authority` as sent: host names are case-insensitive and a scheme's default port names the same
 * server, but an origin may echo the spelling it got (Yoga's `request.url`, links built from
 * `Host`), and lower-cased without `:80` one client's spelling was served to others (found by an
 * outside audit).
 */
function keyedTargetOf(head: RequestHead, config: Config, otherUrlParameters: string): KeyedTarget {
  return {
    host: headerValue(head.headers, ':authority') ?? '',
    endpoint: endpointOf(head.path, config.endpoints) ?? head.path,
    parameters: otherUrlParameters,
    keyedHeaders: keyedHeaders(head.headers, head.method === 'GET'),
  };
}

/**
 * The one place the media type of svc-cache's own answers is decided, per the GraphQL over HTTP
 * spec (README, Errors svc-cache answers itself); their statuses are each code's own.
 */
function inOwnMediaType(response: HttpResponse, head: RequestHead): HttpResponse {
  const contentType = `${ownAnswerMediaType(headerValue(head.headers, 'accept'))}; charset=utf-8`;
  return { ...response, headers: [['content-type', contentType], ...response.headers.filter(([name]) => name !== 'content-type')] };
}

/** Answered in place of Envoy's 500 where a change svc-cache must make to the request (the purge token removed, an `id` left out) leaves its headers no room (forwardOverLimits). */
const REQUEST_HEADERS_TOO_LARGE: Verdict = {
  kind: 'respond',
  outcome: 'ERROR',
  errorCode: 'REQUEST_HEADERS_TOO_LARGE',
  response: graphQLErrorResponse(431, 'The request headers are too large', 'REQUEST_HEADERS_TOO_LARGE'),
};
