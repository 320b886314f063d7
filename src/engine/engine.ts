import { Kind, OperationTypeNode, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import {
  persistedQueryNotFound,
  resolvePersistedQuery,
  withoutPersistedQuery,
  type PersistedQueryRefusal,
} from '../apq/persistedQuery.js';
import type { Config } from '../config/schema.js';
import { parseDocument, selectOperation } from '../graphql/document.js';
import {
  isPlainObject,
  parseGetRequest,
  parsePostRequest,
  rewrittenForOrigin,
  type ParsedHttpRequest,
} from '../graphql/httpRequest.js';
import { operationViolation, queryTextViolation, type LimitViolation } from '../graphql/limits.js';
import { selectionOf } from '../graphql/selection.js';
import { headerValue, type HeaderList } from '../http/headers.js';
import { prepareOperation, stripAddedFields, type PreparedOperation } from '../invalidation/entityFields.js';
import { mutationInvalidationTags, responseTags, type MutationPolicy } from '../invalidation/responseTags.js';
import { invalidationTag } from '../invalidation/tags.js';
import type { Logger } from '../observability/log.js';
import { handlePurgeRequest, isPurgeToken, negotiateResponseMediaType, type PurgeEvent } from '../purge/index.js';
import type { CacheStore, CachedResponse, InvalidationMark } from '../store/types.js';
import { cacheKey, normalisedAccept } from './cacheKey.js';
import { MissCoalescer, type Leadership } from './coalescing.js';
import { freshLifetime, isEncoded, isGraphQLJson, uncacheableReason } from './originResponse.js';
import { cachePolicyFor, type CachePolicy } from './rules.js';
import { scopeBucketKey, scopeVaryHeaders } from './scopes.js';
import { CACHE_STATUS_HEADER, graphQLErrorResponse, type HttpResponse } from '../http/responses.js';
import { hitResponse, replayableHeaders } from './responses.js';

/**
 * The decision engine: what to do with one GraphQL request and, if it went to the origin, with the
 * origin's response. It knows nothing of gRPC; `src/extproc` translates Envoy's messages to these
 * calls and the answers back.
 *
 * Per request: `decideRequestHead` (headers only; GET requests are decided there), then
 * `decideRequest` with the body when one follows, then `decideResponseHead` and
 * `decideResponseBody` for whatever was forwarded, or `abandon` when the request ends early.
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
  invalidation(event: { policy: MutationPolicy; tags: number; removedEntries: number } | { policy: MutationPolicy; failed: string }): void;
}

export interface EngineDependencies {
  state: () => RuntimeState;
  store: CacheStore;
  events?: EngineEvents;
  /** Key of the hash that names scope buckets; replicas sharing a store must share it. */
  scopeKeySecret: Buffer;
  logger: Logger;
  now?: () => number;
}

export interface RequestHead {
  method: string;
  /** `:path`, query string included. */
  path: string;
  headers: HeaderList;
  /** False when the headers ended the request (Envoy's `end_of_stream`). */
  hasBody: boolean;
}

export interface HeaderChanges {
  set: Array<[string, string]>;
  remove: string[];
}

export type CacheStatus = 'HIT' | 'MISS' | 'PASS';

export type RequestDecision =
  /** Answer now without the origin: a HIT, a purge, or an error svc-cache owns. */
  | { kind: 'respond'; response: HttpResponse; status: CacheStatus | 'ERROR' }
  /**
   * Let the request go on, its headers changed and its body replaced by `requestBody` when given
   * (only ever for a request whose body the engine was handed); come back with the origin's
   * response under `plan`.
   */
  | { kind: 'forward'; requestHeaders: HeaderChanges; requestBody?: Buffer; plan: ResponsePlan };

export type RequestHeadDecision = RequestDecision | { kind: 'need-body' };

/** What the engine remembers between a forwarded request and the origin's response. */
export type ResponsePlan = PassPlan | StorePlan | MutationPlan;

/** Not stored. The body is needed only to remove fields svc-cache added to the query. */
export interface PassPlan {
  kind: 'pass';
  reason: string;
  added?: PreparedOperation;
  explain?: Explanation;
}

/**
 * Present when the request asked for `svc-debug: 1` with a valid purge token: what the decision
 * was based on, returned as `svc-debug-*` response headers.
 */
export interface Explanation {
  scope?: string;
  bucket?: string;
  rules?: string;
}

/** A query to store if the origin's answer allows. */
export interface StorePlan {
  kind: 'store';
  key: string;
  bucket: string;
  operationName: string;
  mark: InvalidationMark;
  policy: CachePolicy;
  schema: GraphQLSchema;
  prepared: PreparedOperation;
  /** Headers that cached answers of this scope carry (vary, cache-control). */
  scopeHeaders: Array<[string, string]>;
  /** Request headers the cache key already covers; an origin `vary` on anything else is not cacheable. */
  keyedRequestHeaders: ReadonlySet<string>;
  limits: { maxResponseBodyBytes: number; ignoreOriginCacheControl: boolean };
  /** Set when this request leads the fetch that identical requests wait for. */
  leadership: Leadership | undefined;
  explain?: Explanation;
}

/** A mutation whose answer names what it changed. */
export interface MutationPlan {
  kind: 'mutation';
  schema: GraphQLSchema;
  prepared: PreparedOperation;
  policy: MutationPolicy;
  explain?: Explanation;
}

interface DocumentAnalysis {
  config: Config;
  schema: GraphQLSchema | undefined;
  violation: LimitViolation | undefined;
  /** Undefined without a schema, or when no rule matches. */
  policy: CachePolicy | undefined;
}

export interface ResponseHeadDecision {
  headers: HeaderChanges;
  /** True when the engine needs the body (`decideResponseBody` follows). */
  wantsBody: boolean;
  /** The plan for the body, possibly downgraded to a pass by what the headers said. */
  plan: ResponsePlan;
}

export interface ResponseBodyDecision {
  headers: HeaderChanges;
  /** Replaces the origin's body for the client when given. */
  body?: Buffer;
  status: CacheStatus;
}

export class DecisionEngine {
  private readonly now: () => number;
  private readonly coalescer = new MissCoalescer();
  /** Per parsed document (documents are remembered by query text): what its text alone decides. */
  private readonly analyses = new WeakMap<DocumentNode, DocumentAnalysis>();

  constructor(private readonly deps: EngineDependencies) {
    this.now = deps.now ?? Date.now;
  }

  /** The plan for a response whose request svc-cache never saw (an Envoy local reply). */
  static passPlan(reason: string): ResponsePlan {
    return { kind: 'pass', reason };
  }

  /** What a request gets when deciding it failed: the origin, untouched but for the purge token. */
  passAfterFault(head: RequestHead): RequestDecision {
    return pass('engine error', head, this.deps.state().config);
  }

  async decideRequestHead(head: RequestHead): Promise<RequestHeadDecision> {
    const { config } = this.deps.state();
    if (isStreamingOrUpgrade(head.headers)) return pass('streaming or upgrade request', head, config);
    if (head.method === 'GET') {
      // Over HTTP/2 a GET may end with an empty DATA frame: its headers then lack end_of_stream and only the
      // body tells whether it has one (docs/ext-proc.md, HTTP/2 requests).
      if (head.hasBody) return { kind: 'need-body' };
      return this.decideGraphQL(head, parseGetRequest(head.path));
    }
    if (head.method !== 'POST') return pass(`method ${head.method}`, head, config);
    const declaredLength = Number(headerValue(head.headers, 'content-length'));
    if (declaredLength > config.limits.maxRequestBodyBytes) return bodyTooLarge(config);
    if (!head.hasBody) return this.decideGraphQL(head, parsePostRequest(head.headers, Buffer.alloc(0)));
    return { kind: 'need-body' };
  }

  async decideRequest(head: RequestHead, body: Buffer): Promise<RequestDecision> {
    const { config } = this.deps.state();
    if (head.method === 'GET') {
      if (body.length > 0) return pass('GET with a body', head, config);
      return this.decideGraphQL(head, parseGetRequest(head.path));
    }
    if (body.length > config.limits.maxRequestBodyBytes) return bodyTooLarge(config);
    return this.decideGraphQL(head, parsePostRequest(head.headers, body));
  }

  decideResponseHead(plan: ResponsePlan, status: number, headers: HeaderList, endOfStream: boolean): ResponseHeadDecision {
    const passing = (pass: PassPlan): ResponseHeadDecision => ({
      headers: cacheStatusHeader('PASS', explanationHeaders(pass.explain, pass.reason)),
      wantsBody: pass.added !== undefined && !endOfStream && isGraphQLJson(headers) && !isEncoded(headers),
      plan: pass,
    });
    switch (plan.kind) {
      case 'pass':
        return passing(plan);
      case 'mutation':
        if (endOfStream || !isGraphQLJson(headers) || isEncoded(headers)) {
          return passing({ kind: 'pass', reason: 'mutation', ...(plan.explain ? { explain: plan.explain } : {}) });
        }
        return { headers: cacheStatusHeader('PASS', explanationHeaders(plan.explain, 'mutation')), wantsBody: true, plan };
      case 'store': {
        const reason =
          uncacheableReason(status, headers, plan.keyedRequestHeaders, plan.limits.maxResponseBodyBytes) ??
          (endOfStream ? 'origin response without a body' : undefined);
        if (reason === undefined) return { headers: { set: [], remove: [] }, wantsBody: true, plan };
        plan.leadership?.release();
        return passing({ kind: 'pass', reason, ...addedFields(plan.prepared), ...(plan.explain ? { explain: plan.explain } : {}) });
      }
    }
  }

  async decideResponseBody(plan: ResponsePlan, responseHeaders: HeaderList, body: Buffer): Promise<ResponseBodyDecision> {
    switch (plan.kind) {
      case 'pass':
        return {
          ...withBody(plan.added ? stripAddedFields(plan.added, body) : body, body),
          headers: cacheStatusHeader('PASS', explanationHeaders(plan.explain, plan.reason)),
          status: 'PASS',
        };
      case 'mutation':
        return this.invalidateAfterMutation(plan, body);
      case 'store':
        try {
          return await this.storeResponse(plan, responseHeaders, body);
        } finally {
          plan.leadership?.release();
        }
    }
  }

  /** A popular query's limits and rules are worked out once per config and schema, not per HIT. */
  private analysisOf(document: DocumentNode, config: Config, schema: GraphQLSchema | undefined): DocumentAnalysis {
    const known = this.analyses.get(document);
    if (known && known.config === config && known.schema === schema) return known;
    const analysis: DocumentAnalysis = {
      config,
      schema,
      violation: operationViolation(document, config.limits),
      policy: schema ? cachePolicyFor(config.rules, selectionOf(schema, document)) : undefined,
    };
    this.analyses.set(document, analysis);
    return analysis;
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

  /** The request ended before its response was decided (client gone, stream cancelled). */
  abandon(plan: ResponsePlan | undefined): void {
    if (plan?.kind === 'store') plan.leadership?.release();
  }

  private async decideGraphQL(head: RequestHead, request: ParsedHttpRequest): Promise<RequestDecision> {
    const { config, schema } = this.deps.state();
    if (request.kind === 'uninterpretable') return pass(request.reason, head, config);
    const { params } = request;
    // Before APQ, so a query too long to serve is never registered either.
    const sentTooLarge = params.query === undefined ? undefined : queryTextViolation(params.query, config.limits);
    if (sentTooLarge) return limitExceeded(sentTooLarge);
    const persisted = await resolvePersistedQuery(params.query, params.extensions, {
      apq: config.apq,
      store: this.deps.store,
      logger: this.deps.logger,
    });
    if (persisted.kind === 'refused') {
      this.report((events) => events.persistedQuery(persisted.reason));
      return { kind: 'respond', response: persisted.response, status: 'ERROR' };
    }
    if (persisted.kind === 'resolved' && persisted.registered) this.report((events) => events.persistedQuery('registered'));
    const query = persisted.kind === 'resolved' ? persisted.query : params.query;
    // The origin always gets the full query text, so it needs no APQ support of its own.
    const expandPersistedQuery = persisted.kind === 'resolved' && !config.apq.forwardPersistedQuery;
    const forward = (plan: ResponsePlan, originQuery?: string): RequestDecision => {
      const origin = expandPersistedQuery || originQuery !== undefined
        ? rewrittenForOrigin(request, head.path, {
            query: originQuery ?? query!,
            // A rewritten query no longer matches the client's hash.
            extensions: withoutPersistedQuery(params.extensions),
          })
        : {};
      if (origin.path !== undefined && Buffer.byteLength(origin.path) > MAX_REWRITTEN_PATH_BYTES) {
        // Envoy answers 500 when a mutation leaves the request headers over its limit (60 KiB),
        // whatever failure_mode_allow says; a GET grown that long is not rewritten.
        if (plan.kind === 'store') plan.leadership?.release();
        if (params.query === undefined) {
          // The hash came alone: Apollo clients then resend the query over POST.
          this.report((events) => events.persistedQuery('not-found'));
          return { kind: 'respond', response: persistedQueryNotFound(), status: 'ERROR' };
        }
        return pass('rewritten GET path too long', head, config);
      }
      return {
        kind: 'forward',
        requestHeaders: {
          set: origin.path === undefined ? [] : [[':path', origin.path]],
          // Identity bodies are what the cache reads and replays (Envoy can compress in front).
          remove: plan.kind === 'pass' ? tokenRemoval(head, config) : [...tokenRemoval(head, config), 'accept-encoding'],
        },
        ...(origin.body === undefined ? {} : { requestBody: origin.body }),
        plan,
      };
    };
    const explain: Explanation | undefined = explanationRequested(head, config) ? {} : undefined;
    const passed = (reason: string): RequestDecision => forward({ kind: 'pass', reason, ...(explain ? { explain } : {}) });

    if (query === undefined) return passed('no query text');
    // A query registered under a larger limit before a reload lowered it.
    const registeredTooLarge = params.query === undefined ? queryTextViolation(query, config.limits) : undefined;
    if (registeredTooLarge) return limitExceeded(registeredTooLarge);
    const parsed = parseDocument(query);
    if ('kind' in parsed) return passed(`syntax error: ${parsed.message}`);
    const selected = selectOperation(parsed, params.operationName);
    if (selected.kind === 'invalid') return passed(selected.reason);
    const analysis = this.analysisOf(selected.document, config, schema);
    if (analysis.violation) return limitExceeded(analysis.violation);
    const isMutation = selected.operation.operation === OperationTypeNode.MUTATION;
    if (isMutation && request.method === 'GET') return mutationOverGet();
    if (!schema) {
      if (isMutation && headerValue(head.headers, tokenHeader(config)) && looksLikePurge(selected.operation)) {
        return purgeUnavailable();
      }
      return passed(isMutation ? 'mutation' : 'origin schema not loaded');
    }
    const purge = await handlePurgeRequest(
      {
        document: selected.document,
        operation: selected.operation,
        operationName: params.operationName,
        variables: params.variables,
        headers: head.headers,
        responseMediaType: negotiateResponseMediaType(headerValue(head.headers, 'accept')),
      },
      { originSchema: schema, config, store: this.deps.store, logger: this.deps.logger, onPurge: (event) => this.report((events) => events.purge(event)) },
    );
    if (purge) return { kind: 'respond', response: purge, status: 'PASS' };

    if (isMutation) {
      if (config.mutationPolicy === 'None') return passed('mutation');
      const prepared = prepareOperation(schema, selected.document, config.keyFields);
      return forward(
        { kind: 'mutation', schema, prepared, policy: config.mutationPolicy, ...(explain ? { explain } : {}) },
        originQueryOf(prepared),
      );
    }
    if (selected.operation.operation === OperationTypeNode.SUBSCRIPTION) return passed('subscription');
    if (config.cache.bypassCacheHeaders.some((name) => headerValue(head.headers, name.toLowerCase()) !== undefined)) {
      return passed('bypass header');
    }
    const policy = analysis.policy;
    if (!policy) return passed('no caching rule matches');
    if (policy.maxAge <= 0) return passed('a matching rule has maxAge 0');
    const credentialed =
      headerValue(head.headers, 'authorization') !== undefined || headerValue(head.headers, 'cookie') !== undefined;
    if (policy.scopes.length === 0 && credentialed && !config.cache.publicForCredentialedRequests) {
      return passed('credentials on a request for the PUBLIC scope');
    }

    const bucket = scopeBucketKey(policy.scopes, config.scopes, head.headers, this.deps.scopeKeySecret);
    const key = cacheKey(bucket, normalisedAccept(head.headers), selected.name, selected.normalised, params.variables);
    let lookup;
    try {
      lookup = await this.deps.store.lookup(key);
    } catch (error) {
      this.deps.logger.warn({ err: errorMessage(error) }, 'cache store unavailable; passing to origin');
      return passed('store unavailable');
    }
    const storeExplain: Explanation | undefined = explain && {
      scope: policy.scopes.length === 0 ? 'PUBLIC' : policy.scopes.join('+'),
      bucket,
      rules: policy.matched.map((rule) => rule.description ?? `rules[${config.rules.indexOf(rule)}]`).join('; '),
    };
    const varyNames = scopeVaryHeaders(policy.scopes, config.scopes);
    const scopeHeaders: Array<[string, string]> =
      policy.scopes.length === 0 ? [] : [['cache-control', 'private, no-cache'], ['vary', varyNames.join(', ')]];
    const answer = (entry: CachedResponse): RequestDecision => ({
      kind: 'respond',
      response: hitResponse(entry, this.now(), [...mergeScopeHeaders(entry.headers, scopeHeaders), ...explanationHeaders(storeExplain)]),
      status: 'HIT',
    });
    const ageMs = (entry: CachedResponse): number => this.now() - entry.storedAt;
    const fresh = (entry: CachedResponse | undefined): CachedResponse | undefined =>
      entry !== undefined && ageMs(entry) <= entry.maxAge * 1000 ? entry : undefined;
    const cached = fresh(lookup.entry);
    if (cached) return answer(cached);
    const leadership = this.coalescer.lead(key);
    if (!leadership) {
      // Stale-while-revalidate: another request is already refreshing this entry, so within swr
      // its stale answer is served at once (with an age past max-age) instead of waiting.
      const stale = lookup.entry;
      if (stale && ageMs(stale) <= (stale.maxAge + stale.swr) * 1000) return answer(stale);
      if (await this.coalescer.follow(key, config.cache.coalesceWaitMs)) {
        try {
          const afterLeader = fresh((await this.deps.store.lookup(key)).entry);
          if (afterLeader) return answer(afterLeader);
        } catch (error) {
          this.deps.logger.warn({ err: errorMessage(error) }, 'cache store unavailable; passing to origin');
          return passed('store unavailable');
        }
      }
    }
    const prepared = prepareOperation(schema, selected.document, config.keyFields);
    return forward(
      {
        kind: 'store',
        key,
        bucket,
        operationName: selected.name,
        mark: lookup.mark,
        policy,
        schema,
        prepared,
        scopeHeaders,
        keyedRequestHeaders: new Set(['accept', 'accept-encoding', 'content-type', 'content-length', ...varyNames]),
        limits: {
          maxResponseBodyBytes: config.limits.maxResponseBodyBytes,
          ignoreOriginCacheControl: config.cache.ignoreOriginCacheControl,
        },
        leadership,
        ...(storeExplain ? { explain: storeExplain } : {}),
      },
      originQueryOf(prepared),
    );
  }

  private async storeResponse(plan: StorePlan, responseHeaders: HeaderList, body: Buffer): Promise<ResponseBodyDecision> {
    const passed = (reason: string): ResponseBodyDecision => {
      this.deps.logger.debug({ reason }, 'response not stored');
      return {
        ...withBody(stripAddedFields(plan.prepared, body), body),
        headers: cacheStatusHeader('PASS', explanationHeaders(plan.explain, reason)),
        status: 'PASS',
      };
    };
    if (body.length > plan.limits.maxResponseBodyBytes) return passed('response larger than limits');
    const result = parseGraphQLResult(body);
    if (!result || result.errors !== undefined || !isPlainObject(result.data)) {
      return passed('response is not a GraphQL result without errors');
    }
    const tags = responseTags(plan.schema, plan.prepared, result, plan.operationName);
    if (!tags) return passed('response cannot be tagged completely');
    const maxAge = freshLifetime(plan.policy.maxAge, responseHeaders, plan.limits.ignoreOriginCacheControl);
    if (maxAge <= 0) return passed('origin max-age 0');
    const clientBody = stripAddedFields(plan.prepared, body);
    try {
      const stored = await this.deps.store.store(
        plan.key,
        {
          body: clientBody,
          contentType: headerValue(responseHeaders, 'content-type') ?? 'application/json',
          headers: replayableHeaders(responseHeaders),
          storedAt: this.now(),
          maxAge,
          swr: plan.policy.swr,
        },
        { tags: [invalidationTag.bucket(plan.bucket), ...tags], ttlSeconds: maxAge + plan.policy.swr, mark: plan.mark },
      );
      if (!stored) return passed('invalidated while the origin answered');
    } catch (error) {
      this.deps.logger.warn({ err: errorMessage(error) }, 'cache store unavailable; response not stored');
      return passed('store unavailable');
    }
    return {
      ...withBody(clientBody, body),
      headers: cacheStatusHeader('MISS', [
        ...mergeScopeHeaders(responseHeaders, plan.scopeHeaders),
        ...explanationHeaders(plan.explain),
      ]),
      status: 'MISS',
    };
  }

  /**
   * Invalidates what the mutation's answer says it changed, before the client hears back, so the
   * client's next query misses. A failure is logged and counted, never silent; the client still gets
   * the origin's answer, since the mutation itself went through.
   */
  private async invalidateAfterMutation(plan: MutationPlan, body: Buffer): Promise<ResponseBodyDecision> {
    const answer: ResponseBodyDecision = {
      ...withBody(stripAddedFields(plan.prepared, body), body),
      headers: cacheStatusHeader('PASS', explanationHeaders(plan.explain, 'mutation')),
      status: 'PASS',
    };
    const result = parseGraphQLResult(body);
    if (!result) return answer;
    const tags = mutationInvalidationTags(plan.schema, plan.prepared, result, plan.policy);
    if (tags.length === 0) return answer;
    try {
      const removedEntries = await this.deps.store.invalidate(tags);
      this.deps.logger.info({ policy: plan.policy, tags: tags.length, removedEntries }, 'invalidated after mutation');
      this.report((events) => events.invalidation({ policy: plan.policy, tags: tags.length, removedEntries }));
    } catch (error) {
      this.deps.logger.error({ policy: plan.policy, tags: tags.length, err: errorMessage(error) }, 'invalidation after mutation failed');
      this.report((events) => events.invalidation({ policy: plan.policy, failed: errorMessage(error) }));
    }
    return answer;
  }
}

/** Far under Envoy's 60 KiB request header limit, with room for the other headers. */
const MAX_REWRITTEN_PATH_BYTES = 16 * 1024;

/** The query text for the origin when svc-cache added fields to it, else undefined (send the client's). */
function originQueryOf(prepared: PreparedOperation): string | undefined {
  return prepared.rewritten ? prepared.query : undefined;
}

function addedFields(prepared: PreparedOperation): { added?: PreparedOperation } {
  return prepared.rewritten ? { added: prepared } : {};
}

/** A replacement body for the client only when it differs from what the origin sent. */
function withBody(clientBody: Buffer, originBody: Buffer): { body?: Buffer } {
  return clientBody === originBody ? {} : { body: clientBody };
}

function pass(reason: string, head: RequestHead, config: Config): RequestDecision {
  const plan: PassPlan = explanationRequested(head, config) ? { kind: 'pass', reason, explain: {} } : { kind: 'pass', reason };
  return { kind: 'forward', requestHeaders: { set: [], remove: tokenRemoval(head, config) }, plan };
}

function tokenHeader(config: Config): string {
  return config.purge.header.toLowerCase();
}

/** The purge token is for svc-cache alone and never reaches the origin. */
function tokenRemoval(head: RequestHead, config: Config): string[] {
  return headerValue(head.headers, tokenHeader(config)) === undefined ? [] : [tokenHeader(config)];
}

function bodyTooLarge(config: Config): RequestDecision {
  return {
    kind: 'respond',
    status: 'ERROR',
    response: graphQLErrorResponse(
      413,
      `Request body is larger than ${config.limits.maxRequestBodyBytes} bytes`,
      'PAYLOAD_TOO_LARGE',
    ),
  };
}

function limitExceeded(violation: LimitViolation): RequestDecision {
  return { kind: 'respond', status: 'ERROR', response: graphQLErrorResponse(400, violation.message, violation.code) };
}

function mutationOverGet(): RequestDecision {
  return {
    kind: 'respond',
    status: 'ERROR',
    response: graphQLErrorResponse(405, 'Mutations cannot be sent with GET; use POST', 'METHOD_NOT_ALLOWED', [
      ['allow', 'POST'],
    ]),
  };
}

/**
 * Without the origin schema there is no purge schema to tell purges from origin mutations; a
 * token-bearing mutation whose root fields are all named like purge fields is answered 503 so the
 * operator's purge job retries, rather than sent to the origin (which would not know the fields).
 */
function looksLikePurge(operation: OperationDefinitionNode): boolean {
  return operation.selectionSet.selections.every(
    (selection) => selection.kind === Kind.FIELD && /^_?purge/.test(selection.name.value),
  );
}

function purgeUnavailable(): RequestDecision {
  return {
    kind: 'respond',
    status: 'ERROR',
    response: graphQLErrorResponse(
      503,
      'The purge API is not available until the origin schema is loaded',
      'PURGE_UNAVAILABLE',
      [['retry-after', '5']],
    ),
  };
}

function cacheStatusHeader(status: CacheStatus, extra: Array<[string, string]> = []): HeaderChanges {
  return { set: [[CACHE_STATUS_HEADER, status], ...extra], remove: [] };
}

/**
 * `svc-debug: 1` explains the decision, but only to whoever holds a purge token: the headers show
 * the configuration (rules, scopes), which is not for every client to read.
 */
function explanationRequested(head: RequestHead, config: Config): boolean {
  return headerValue(head.headers, DEBUG_HEADER) === '1' && isPurgeToken(headerValue(head.headers, tokenHeader(config)), config.purge.tokens);
}

const DEBUG_HEADER = 'svc-debug';

function explanationHeaders(explain: Explanation | undefined, passReason?: string): Array<[string, string]> {
  if (!explain) return [];
  const headers: Array<[string, string]> = [];
  if (explain.scope !== undefined) headers.push(['svc-debug-scope', explain.scope]);
  if (explain.bucket !== undefined) headers.push(['svc-debug-bucket', explain.bucket]);
  if (explain.rules !== undefined) headers.push(['svc-debug-rules', explain.rules]);
  if (passReason !== undefined) headers.push(['svc-debug-pass-reason', passReason]);
  // Header values are visible ASCII: a rule description or a reason quoting the query may not be.
  return headers.map(([name, value]) => [name, value.replace(/[^\x20-\x7e]/g, '?')]);
}

/** Scope headers for a cached answer, with `vary` extended by the origin's own. */
function mergeScopeHeaders(origin: HeaderList, scopeHeaders: Array<[string, string]>): Array<[string, string]> {
  if (scopeHeaders.length === 0) return [];
  const originVary = headerValue(origin, 'vary');
  return scopeHeaders.map(([name, value]): [string, string] =>
    name === 'vary' && originVary ? [name, `${originVary}, ${value}`] : [name, value],
  );
}

function isStreamingOrUpgrade(headers: HeaderList): boolean {
  if (headerValue(headers, 'upgrade') !== undefined) return true;
  const accept = (headerValue(headers, 'accept') ?? '').toLowerCase();
  return accept.includes('text/event-stream') || accept.includes('multipart/mixed');
}

function parseGraphQLResult(body: Buffer): Record<string, unknown> | undefined {
  try {
    const result: unknown = JSON.parse(body.toString('utf8'));
    return isPlainObject(result) ? result : undefined;
  } catch {
    return undefined;
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
