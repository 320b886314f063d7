import { createHash } from 'node:crypto';
import { Kind, OperationTypeNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { Config } from '../config/schema.js';
import type { Logger } from '../observability/log.js';
import type { CacheStore, CachedResponse, InvalidationMark } from '../store/types.js';
import { canonicalJson } from '../graphql/canonicalJson.js';
import { parseDocument, selectOperation } from '../graphql/document.js';
import {
  isPlainObject,
  parseGetRequest,
  parsePostRequest,
  rewrittenForOrigin,
  type ParsedHttpRequest,
} from '../graphql/httpRequest.js';
import { resolvePersistedQuery, withoutPersistedQuery, type PersistedQueryRefusal } from '../apq/persistedQuery.js';
import { selectionOf } from '../graphql/selection.js';
import { headerValue, mediaType, type HeaderList } from '../http/headers.js';
import { invalidationTag } from '../invalidation/tags.js';
import { MissCoalescer, type Leadership } from './coalescing.js';
import { cachePolicyFor, type CachePolicy } from './rules.js';
import { scopeBucketKey, scopeVaryHeaders } from './scopes.js';
import {
  CACHE_STATUS_HEADER,
  graphQLErrorResponse,
  hitResponse,
  replayableHeaders,
  type HttpResponse,
} from './responses.js';

/**
 * The decision engine: what to do with one GraphQL request and, if it went to the origin, with the
 * origin's response. It knows nothing of gRPC; `src/extproc` translates Envoy's messages to these
 * calls and the answers back.
 *
 * Per request: `decideRequestHead` (headers only; GET requests are decided there), then
 * `decideRequest` with the body when one follows, then `decideResponseHead` and
 * `decideResponseBody` for whatever was forwarded.
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
  /** Answer now without the origin: a HIT, or an error svc-cache owns. */
  | { kind: 'respond'; response: HttpResponse; status: CacheStatus | 'ERROR' }
  /**
   * Let the request go on, its headers changed and its body replaced by `requestBody` when given
   * (only ever for a request whose body the engine was handed); come back with the origin's
   * response under `plan`.
   */
  | { kind: 'forward'; requestHeaders: HeaderChanges; requestBody?: Buffer; plan: ResponsePlan };

export type RequestHeadDecision = RequestDecision | { kind: 'need-body' };

/** What the engine remembers between a forwarded request and the origin's response. */
export type ResponsePlan =
  /** The response is not looked at: its body can stream through unbuffered. */
  | { kind: 'pass'; reason: string }
  | {
      kind: 'store';
      key: string;
      mark: InvalidationMark;
      policy: CachePolicy;
      tags: string[];
      /** Headers that cached answers of this scope carry (vary, cache-control). */
      scopeHeaders: Array<[string, string]>;
      /** Request headers the cache key already covers; an origin `vary` on anything else is not cacheable. */
      keyedRequestHeaders: ReadonlySet<string>;
      limits: { maxResponseBodyBytes: number; ignoreOriginCacheControl: boolean };
      /** Set when this request leads the fetch that identical requests wait for. */
      leadership: Leadership | undefined;
    };

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

  constructor(private readonly deps: EngineDependencies) {
    this.now = deps.now ?? Date.now;
  }

  /** The plan for a response whose request svc-cache never saw (an Envoy local reply). */
  static passPlan(reason: string): ResponsePlan {
    return { kind: 'pass', reason };
  }

  async decideRequestHead(head: RequestHead): Promise<RequestHeadDecision> {
    const { config } = this.deps.state();
    if (isStreamingOrUpgrade(head.headers)) return pass('streaming or upgrade request');
    if (head.method === 'GET') {
      if (head.hasBody) return pass('GET with a body');
      return this.decideGraphQL(head, parseGetRequest(head.path));
    }
    if (head.method !== 'POST') return pass(`method ${head.method}`);
    const declaredLength = Number(headerValue(head.headers, 'content-length'));
    if (declaredLength > config.limits.maxRequestBodyBytes) return bodyTooLarge(config);
    if (!head.hasBody) return this.decideGraphQL(head, parsePostRequest(head.headers, Buffer.alloc(0)));
    return { kind: 'need-body' };
  }

  async decideRequest(head: RequestHead, body: Buffer): Promise<RequestDecision> {
    const { config } = this.deps.state();
    if (body.length > config.limits.maxRequestBodyBytes) return bodyTooLarge(config);
    return this.decideGraphQL(head, parsePostRequest(head.headers, body));
  }

  decideResponseHead(plan: ResponsePlan, status: number, headers: HeaderList, endOfStream: boolean): ResponseHeadDecision {
    if (plan.kind === 'pass') return { headers: cacheStatusHeader('PASS'), wantsBody: false, plan };
    const notCacheable = (reason: string): ResponseHeadDecision => {
      plan.leadership?.release();
      return { headers: cacheStatusHeader('PASS'), wantsBody: false, plan: { kind: 'pass', reason } };
    };
    if (status !== 200) return notCacheable(`origin status ${status}`);
    const type = mediaType(headerValue(headers, 'content-type'));
    if (type !== 'application/json' && type !== 'application/graphql-response+json') {
      return notCacheable(`origin content type "${type}"`);
    }
    const cacheControl = parseCacheControl(headerValue(headers, 'cache-control'));
    if (cacheControl.has('no-store')) return notCacheable('origin cache-control no-store');
    // svc-cache does not revalidate, and a no-cache answer must not be reused without it (RFC 9111 section 5.2.2.4).
    if (cacheControl.has('no-cache')) return notCacheable('origin cache-control no-cache');
    if (cacheControl.has('private')) return notCacheable('origin cache-control private');
    if (headerValue(headers, 'set-cookie') !== undefined) return notCacheable('origin set-cookie');
    if (headerValue(headers, 'content-encoding') !== undefined) return notCacheable('origin content-encoding');
    const unkeyedVary = varyOutsideKey(headerValue(headers, 'vary'), plan.keyedRequestHeaders);
    if (unkeyedVary) return notCacheable(`origin vary on ${unkeyedVary}`);
    if (Number(headerValue(headers, 'content-length')) > plan.limits.maxResponseBodyBytes) {
      return notCacheable('response larger than limits.maxResponseBodyBytes');
    }
    if (endOfStream) return notCacheable('origin response without a body');
    return { headers: { set: [], remove: [] }, wantsBody: true, plan };
  }

  async decideResponseBody(
    plan: ResponsePlan,
    responseHeaders: HeaderList,
    body: Buffer,
  ): Promise<ResponseBodyDecision> {
    if (plan.kind === 'pass') return { headers: cacheStatusHeader('PASS'), status: 'PASS' };
    try {
      return await this.storeResponse(plan, responseHeaders, body);
    } finally {
      plan.leadership?.release();
    }
  }

  /** The request ended before its response was decided (client gone, stream cancelled). */
  abandon(plan: ResponsePlan | undefined): void {
    if (plan?.kind === 'store') plan.leadership?.release();
  }

  private async storeResponse(
    plan: Extract<ResponsePlan, { kind: 'store' }>,
    responseHeaders: HeaderList,
    body: Buffer,
  ): Promise<ResponseBodyDecision> {
    const passed = (reason: string): ResponseBodyDecision => {
      this.deps.logger.debug({ reason }, 'response not stored');
      return { headers: cacheStatusHeader('PASS'), status: 'PASS' };
    };
    if (body.length > plan.limits.maxResponseBodyBytes) return passed('response larger than limits');
    if (!isCacheableResult(body)) return passed('response is not a GraphQL result without errors');
    const ttl = this.freshLifetime(plan, responseHeaders);
    if (ttl <= 0) return passed('origin max-age 0');
    const policy = { ...plan.policy, maxAge: ttl };
    try {
      const stored = await this.deps.store.store(
        plan.key,
        {
          body,
          contentType: headerValue(responseHeaders, 'content-type') ?? 'application/json',
          headers: replayableHeaders(responseHeaders),
          storedAt: this.now(),
          maxAge: policy.maxAge,
          swr: policy.swr,
        },
        { tags: plan.tags, ttlSeconds: policy.maxAge + policy.swr, mark: plan.mark },
      );
      if (!stored) return passed('invalidated while the origin answered');
    } catch (error) {
      this.deps.logger.warn({ err: errorMessage(error) }, 'cache store unavailable; response not stored');
      return passed('store unavailable');
    }
    return {
      headers: { set: [[CACHE_STATUS_HEADER, 'MISS'], ...mergeScopeHeaders(responseHeaders, plan.scopeHeaders)], remove: [] },
      status: 'MISS',
    };
  }

  private async decideGraphQL(head: RequestHead, request: ParsedHttpRequest): Promise<RequestDecision> {
    if (request.kind === 'uninterpretable') return pass(request.reason);
    const { config, schema } = this.deps.state();
    const { params } = request;
    const persisted = await resolvePersistedQuery(params.query, params.extensions, {
      apq: config.apq,
      maxQueryBytes: config.limits.maxQueryBytes,
      store: this.deps.store,
      logger: this.deps.logger,
    });
    if (persisted.kind === 'refused') {
      this.deps.events?.persistedQuery(persisted.reason);
      return { kind: 'respond', response: persisted.response, status: 'ERROR' };
    }
    if (persisted.kind === 'resolved' && persisted.registered) this.deps.events?.persistedQuery('registered');
    const query = persisted.kind === 'resolved' ? persisted.query : params.query;
    // The origin always gets the full query text, so it needs no APQ support of its own.
    const origin = originRequest(head, request, persisted.kind === 'resolved' && !config.apq.forwardPersistedQuery, query);
    const forward = (plan: ResponsePlan, removeHeaders: string[] = []): RequestDecision => ({
      kind: 'forward',
      requestHeaders: { set: origin.path === undefined ? [] : [[':path', origin.path]], remove: removeHeaders },
      ...(origin.body === undefined ? {} : { requestBody: origin.body }),
      plan,
    });
    const passed = (reason: string): RequestDecision => forward({ kind: 'pass', reason });

    if (query === undefined) return passed('no query text');
    const parsed = parseDocument(query);
    if ('kind' in parsed) return passed(`syntax error: ${parsed.message}`);
    const selected = selectOperation(parsed, params.operationName);
    if (selected.kind === 'invalid') return passed(selected.reason);
    if (selected.operation.operation === OperationTypeNode.MUTATION) {
      if (request.method === 'GET') return mutationOverGet();
      return passed('mutation');
    }
    if (selected.operation.operation === OperationTypeNode.SUBSCRIPTION) return passed('subscription');
    if (!schema) return passed('origin schema not loaded');
    if (config.cache.bypassCacheHeaders.some((name) => headerValue(head.headers, name.toLowerCase()) !== undefined)) {
      return passed('bypass header');
    }
    const policy = cachePolicyFor(config.rules, selectionOf(schema, selected.document));
    if (!policy) return passed('no caching rule matches');
    if (policy.maxAge <= 0) return passed('a matching rule has maxAge 0');
    const credentialed =
      headerValue(head.headers, 'authorization') !== undefined || headerValue(head.headers, 'cookie') !== undefined;
    if (policy.scopes.length === 0 && credentialed && !config.cache.publicForCredentialedRequests) {
      return passed('credentials on a request for the PUBLIC scope');
    }

    const bucket = scopeBucketKey(policy.scopes, config.scopes, head.headers, this.deps.scopeKeySecret);
    const accept = normalisedAccept(head.headers);
    const key = cacheKey(bucket, accept, selected.name, selected.normalised, params.variables);
    let lookup;
    try {
      lookup = await this.deps.store.lookup(key);
    } catch (error) {
      this.deps.logger.warn({ err: errorMessage(error) }, 'cache store unavailable; passing to origin');
      return passed('store unavailable');
    }
    const varyNames = scopeVaryHeaders(policy.scopes, config.scopes);
    const scopeHeaders: Array<[string, string]> =
      policy.scopes.length === 0 ? [] : [['cache-control', 'private, no-cache'], ['vary', varyNames.join(', ')]];
    const hit = (entry: CachedResponse | undefined): RequestDecision | undefined =>
      entry && this.now() - entry.storedAt <= entry.maxAge * 1000
        ? { kind: 'respond', response: hitResponse(entry, this.now(), mergeScopeHeaders(entry.headers, scopeHeaders)), status: 'HIT' }
        : undefined;
    const cached = hit(lookup.entry);
    if (cached) return cached;
    const leadership = this.coalescer.lead(key);
    if (!leadership && (await this.coalescer.follow(key, config.cache.coalesceWaitMs))) {
      try {
        const afterLeader = hit((await this.deps.store.lookup(key)).entry);
        if (afterLeader) return afterLeader;
      } catch (error) {
        this.deps.logger.warn({ err: errorMessage(error) }, 'cache store unavailable; passing to origin');
        return passed('store unavailable');
      }
    }
    // The cache stores and replays identity bodies; Envoy can compress in front of the sidecar.
    return forward(
      {
        kind: 'store',
        key,
        mark: lookup.mark,
        policy,
        tags: cacheTags(bucket, selected.name, selected.operation),
        scopeHeaders,
        keyedRequestHeaders: new Set(['accept', 'accept-encoding', 'content-type', 'content-length', ...varyNames]),
        limits: {
          maxResponseBodyBytes: config.limits.maxResponseBodyBytes,
          ignoreOriginCacheControl: config.cache.ignoreOriginCacheControl,
        },
        leadership,
      },
      ['accept-encoding'],
    );
  }

  /** The rule's maxAge, shortened by a shorter origin `s-maxage` or `max-age` unless configured not to. */
  private freshLifetime(plan: Extract<ResponsePlan, { kind: 'store' }>, headers: HeaderList): number {
    if (plan.limits.ignoreOriginCacheControl) return plan.policy.maxAge;
    const directives = parseCacheControl(headerValue(headers, 'cache-control'));
    const origin = directives.get('s-maxage') ?? directives.get('max-age');
    const originSeconds = origin === undefined ? NaN : Number.parseInt(origin, 10);
    return Number.isFinite(originSeconds) ? Math.min(plan.policy.maxAge, originSeconds) : plan.policy.maxAge;
  }
}

/**
 * The cache key of DESIGN.md: scope bucket, `Accept` (the GraphQL over HTTP spec gives
 * `application/graphql-response+json` and `application/json` different answers, and negotiation is
 * the origin's, so the whole normalised header is keyed), operation name, normalised document and
 * canonical variables.
 */
export function cacheKey(
  bucket: string,
  accept: string,
  operationName: string,
  normalisedDocument: string,
  variables: Record<string, unknown>,
): string {
  const digest = createHash('sha256')
    .update(accept)
    .update('\u0000')
    .update(operationName)
    .update('\u0000')
    .update(normalisedDocument)
    .update('\u0000')
    .update(canonicalJson(variables))
    .digest('base64url');
  return `${bucket}/${digest}`;
}

function cacheTags(bucket: string, operationName: string, operation: OperationDefinitionNode): string[] {
  const tags = [invalidationTag.bucket(bucket)];
  if (operationName) tags.push(invalidationTag.operation(operationName));
  for (const selection of operation.selectionSet.selections) {
    if (selection.kind === Kind.FIELD) tags.push(invalidationTag.query(selection.name.value));
  }
  return tags;
}

/** How the request must change on its way to the origin: nothing, or the query text put back in. */
function originRequest(
  head: RequestHead,
  request: Extract<ParsedHttpRequest, { kind: 'graphql' }>,
  expandPersistedQuery: boolean,
  query: string | undefined,
): { path?: string; body?: Buffer } {
  if (!expandPersistedQuery || query === undefined) return {};
  return rewrittenForOrigin(request, head.path, { query, extensions: withoutPersistedQuery(request.params.extensions) });
}

function pass(reason: string): RequestDecision {
  return { kind: 'forward', requestHeaders: { set: [], remove: [] }, plan: { kind: 'pass', reason } };
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

function mutationOverGet(): RequestDecision {
  return {
    kind: 'respond',
    status: 'ERROR',
    response: graphQLErrorResponse(405, 'Mutations cannot be sent with GET; use POST', 'METHOD_NOT_ALLOWED', [
      ['allow', 'POST'],
    ]),
  };
}

function cacheStatusHeader(status: CacheStatus): HeaderChanges {
  return { set: [[CACHE_STATUS_HEADER, status]], remove: [] };
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

function normalisedAccept(headers: HeaderList): string {
  const accept = headerValue(headers, 'accept');
  return accept === undefined || accept.trim() === '' ? '*/*' : accept.replace(/\s+/g, '').toLowerCase();
}

function parseCacheControl(value: string | undefined): Map<string, string | undefined> {
  const directives = new Map<string, string | undefined>();
  for (const part of (value ?? '').split(',')) {
    const [name, argument] = part.split('=', 2);
    const directive = name?.trim().toLowerCase();
    if (directive) directives.set(directive, argument?.trim().replace(/^"|"$/g, ''));
  }
  return directives;
}

function varyOutsideKey(vary: string | undefined, keyed: ReadonlySet<string>): string | undefined {
  for (const name of (vary ?? '').split(',')) {
    const header = name.trim().toLowerCase();
    if (header && !keyed.has(header)) return header;
  }
  return undefined;
}

function isCacheableResult(body: Buffer): boolean {
  let result: unknown;
  try {
    result = JSON.parse(body.toString('utf8'));
  } catch {
    return false;
  }
  return isPlainObject(result) && result.errors === undefined && isPlainObject(result.data);
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
