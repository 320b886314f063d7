import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { MutationPolicy } from '../config/index.js';
import { PhaseHistogram } from './phaseHistogram.js';

/**
 * svc-cache's Prometheus metrics, served on the admin port's `/metrics`. Every metric lives on a
 * registry of its own rather than prom-client's global one, so that several sidecars (tests, the
 * demo) can run in one process without their counts mixing. Callers record through the methods
 * below; the metric names and labels are documented in the README's "Metrics" section. Events
 * come in as plain values: this module knows no engine, store, APQ or purge types, and its label
 * unions are its own.
 */

/** What became of one request: served from cache, stored, passed through, or answered with svc-cache's own error. */
export type RequestOutcome = 'HIT' | 'MISS' | 'PASS' | 'ERROR';

/**
 * What an invalidation after a mutation was worked out from: its answer, its root fields' types when
 * the answer could not be read, or an operation svc-cache could not read at all (`unseen-operation`:
 * the whole store is emptied); `retry` applies again those the store failed (src/engine/pendingInvalidations.ts).
 */
export type InvalidationSource = (typeof INVALIDATION_SOURCES)[number];

const INVALIDATION_SOURCES = ['answer', 'root-field-types', 'unseen-operation', 'retry'] as const;

/** The policies that invalidate (`None` never does), for the series reported from the start. */
const INVALIDATING_POLICIES: readonly MutationPolicy[] = ['Entity', 'List', 'Type'];

const MESSAGE_PHASES = ['request_headers', 'request_body', 'request_trailers', 'response_headers', 'response_body', 'response_trailers'] as const;

/** The ext_proc message being answered. */
export type MessagePhase = (typeof MESSAGE_PHASES)[number];

const STORE_OPERATIONS = ['lookup', 'store', 'invalidate', 'invalidateAll', 'markStale', 'markAllStale', 'ping'] as const;

export type StoreOperation = (typeof STORE_OPERATIONS)[number];

/** How a purge request ended: applied, the store failed, refused for its token, or invalid GraphQL. */
export type PurgeResult = (typeof PURGE_RESULTS)[number];

const PURGE_RESULTS = ['purged', 'store-failed', 'not-confirmed', 'unauthorized', 'invalid'] as const;

/** `registered`: a hash and its query were stored; otherwise why the request was refused (`not-found`: PersistedQueryNotFound was answered). */
export type PersistedQueryEvent = (typeof PERSISTED_QUERY_EVENTS)[number];

const PERSISTED_QUERY_EVENTS = ['registered', 'not-found', 'not-supported', 'bad-version', 'bad-hash', 'hash-mismatch', 'bad-shape'] as const;

/** What `recordRequest` reads of a finished request's summary. */
export interface CompletedRequest {
  outcome: RequestOutcome | undefined;
  /** A stable code from a closed set (the engine's `PassReason`), so the label stays bounded. */
  passReason: string | undefined;
  /** svc-cache's own error code of an ERROR, from a closed set (`OwnErrorCode`). */
  errorCode: string | undefined;
  bytesServedFromCache: number;
}

export type ConfigReloadResult = (typeof CONFIG_RELOAD_RESULTS)[number];

const CONFIG_RELOAD_RESULTS = ['ok', 'refused'] as const;

/** Why an expired entry answered for the origin (stale-if-error). */
export type StaleIfErrorFailure = (typeof STALE_IF_ERROR_FAILURES)[number];

const STALE_IF_ERROR_FAILURES = ['origin-status', 'origin-not-graphql'] as const;

/** The gRPC status an ext_proc stream was ended with when svc-cache ended it with an error. */
export type StreamErrorCode = (typeof STREAM_ERROR_CODES)[number];

const STREAM_ERROR_CODES = ['INVALID_ARGUMENT', 'INTERNAL'] as const;

export interface MetricsOptions {
  /** Process and Node.js runtime metrics (CPU, memory, event loop lag, GC); on unless turned off. */
  processMetrics?: boolean;
}

/** Histogram buckets for times from half a millisecond to Envoy's 1 s message_timeout. */
const SECONDS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

export class Metrics {
  readonly registry = new Registry();

  /** Counted as plain numbers on every request, handed to prom-client when scraped. */
  private readonly outcomeCounts = new UnreportedCounts<RequestOutcome>(['HIT', 'MISS', 'PASS', 'ERROR']);

  private readonly requests = new Counter({
    name: 'svc_cache_requests_total',
    help: 'Requests decided, by outcome: HIT (served from cache), MISS (fetched and stored), PASS (forwarded, not stored), ERROR (answered with an error svc-cache owns).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
    collect: () => this.outcomeCounts.report((outcome, count) => this.requests.inc({ outcome }, count)),
  });

  private readonly passes = new Counter({
    name: 'svc_cache_pass_total',
    help: 'Requests passed to the origin without being answered from or stored in the cache, by reason (a stable code, as in svc-debug-pass-reason).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  private readonly errors = new Counter({
    name: 'svc_cache_errors_total',
    help: "Requests svc-cache answered with an error of its own, by code (a stable code, as in the answer's extensions.code).",
    labelNames: ['code'] as const,
    registers: [this.registry],
  });

  private readonly decisionSeconds = new PhaseHistogram(
    'svc_cache_decision_duration_seconds',
    'Time spent answering one ext_proc message, by the message answered. Envoy waits for each answer (message_timeout).',
    'phase',
    MESSAGE_PHASES,
    SECONDS_BUCKETS,
  ).registerOn(this.registry);

  private readonly bytesServedFromCache = new Counter({
    name: 'svc_cache_bytes_served_from_cache_total',
    help: 'Response body bytes answered from the cache, which the origin did not have to produce.',
    registers: [this.registry],
  });

  private readonly streamsActive = new Gauge({
    name: 'svc_cache_streams_active',
    help: 'ext_proc streams open now: one per HTTP request Envoy has in flight through svc-cache.',
    registers: [this.registry],
  });

  private readonly streamErrors = new Counter({
    name: 'svc_cache_stream_errors_total',
    help: 'ext_proc streams svc-cache ended with a gRPC error (Envoy then continues without it), by status.',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });

  private readonly streamsAbandoned = new Counter({
    name: 'svc_cache_streams_abandoned_total',
    help: 'ext_proc streams Envoy ended while svc-cache was still working out an answer: past message_timeout Envoy went on without it (failure_mode_allow), or the client went away.',
    registers: [this.registry],
  });

  private readonly storeErrors = new Counter({
    name: 'svc_cache_store_errors_total',
    help: 'Cache store operations that failed or timed out, by operation.',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });

  private readonly storeSeconds = new Histogram({
    name: 'svc_cache_store_duration_seconds',
    help: 'Time a cache store operation took, failed ones included, by operation.',
    labelNames: ['operation'] as const,
    buckets: SECONDS_BUCKETS,
    registers: [this.registry],
  });

  private readonly purges = new Counter({
    name: 'svc_cache_purges_total',
    help: 'Purge requests, by result: purged, store-failed (answered with an error, nothing promised), not-confirmed (answered 503: not confirmed by the store within 4 s, or by every replica-local cache; it may apply or have applied), unauthorized (no or wrong token), invalid.',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  private readonly purgedEntries = new Counter({
    name: 'svc_cache_purged_entries_total',
    help: 'Cache entries purges removed (mode hard) or marked stale (mode soft; those without swr are removed).',
    labelNames: ['mode'] as const,
    registers: [this.registry],
  });

  private readonly invalidations = new Counter({
    name: 'svc_cache_invalidations_total',
    help: 'Invalidations run after mutations, by mutation policy, what they were worked out from (unseen-operation: the whole store emptied for an operation svc-cache could not read) and result: ok (whether or not entries were removed) or failed (the store did not apply it).',
    labelNames: ['policy', 'from', 'result'] as const,
    registers: [this.registry],
  });

  private readonly invalidatedEntries = new Counter({
    name: 'svc_cache_invalidated_entries_total',
    help: 'Cache entries removed by mutations, by mutation policy.',
    labelNames: ['policy'] as const,
    registers: [this.registry],
  });

  private readonly persistedQueries = new Counter({
    name: 'svc_cache_persisted_queries_total',
    help: 'Automatic persisted query events: registered (a hash learnt), or the refusal answered (not-found: PersistedQueryNotFound, so the client resends the query).',
    labelNames: ['event'] as const,
    registers: [this.registry],
  });

  private readonly coalescedRequests = new Counter({
    name: 'svc_cache_coalesced_requests_total',
    help: 'Requests answered from the entry another identical request fetched and stored, after waiting for it instead of going to the origin (request coalescing).',
    registers: [this.registry],
  });
  private coalescedCount = 0;

  private readonly staleIfErrorAnswers = new Counter({
    name: 'svc_cache_stale_if_error_total',
    help: 'Requests answered with an expired entry because the origin failed (stale-if-error), by failure: origin-status (a 5xx) or origin-not-graphql (a 200 that is no GraphQL result). Also counted as HIT in svc_cache_requests_total.',
    labelNames: ['failure'] as const,
    registers: [this.registry],
  });

  /** Counted as plain numbers on the HIT path, handed to prom-client when scraped. */
  private readonly localCacheCounts = new UnreportedCounts<'hit' | 'miss'>(['hit', 'miss']);

  private readonly localCacheLookups = new Counter({
    name: 'svc_cache_local_cache_total',
    help: 'Lookups of the Redis store with a replica-local cache, by result: hit (answered in process, no Redis round trip) or miss (Redis was asked).',
    labelNames: ['result'] as const,
    registers: [this.registry],
    collect: () => this.localCacheCounts.report((result, count) => this.localCacheLookups.inc({ result }, count)),
  });

  private readonly localCacheEnabled = new Gauge({
    name: 'svc_cache_local_cache_enabled',
    help: '1 while the replica-local cache serves (both Redis connections up, reads tracked), 0 otherwise.',
    registers: [this.registry],
  });

  private readonly purgeAcknowledgementSeconds = new Histogram({
    name: 'svc_cache_purge_ack_seconds',
    help: 'Time a purge (or an invalidation after a mutation) waited for every replica-local cache to acknowledge it, once its scripts had run.',
    buckets: SECONDS_BUCKETS,
    registers: [this.registry],
  });

  private readonly configReloads = new Counter({
    name: 'svc_cache_config_reloads_total',
    help: 'Changes of the configuration file, by result: ok (applied) or refused (invalid; the previous configuration stays).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  private readonly storeUp = new Gauge({
    name: 'svc_cache_store_up',
    help: '1 when the last ping of the cache store succeeded, 0 when it failed: pinged every 15 s, at each /readyz and at each dashboard refresh.',
    registers: [this.registry],
  });

  private readonly configSchemaMismatches = new Gauge({
    name: 'svc_cache_config_schema_mismatches',
    help: 'Names in the configuration (rules, keyFields, listArguments) that the origin schema lacked at its last load, each logged; one in a rule with a scope or maxAge 0 is logged at error, as other rules may cache what it would keep in its scope or uncached.',
    registers: [this.registry],
  });

  private readonly lastConfigReloadSuccessful = new Gauge({
    name: 'svc_cache_config_last_reload_successful',
    help: '1 when the last change of the configuration file was applied (or none happened yet), 0 when it was refused.',
    registers: [this.registry],
  });

  constructor(options: MetricsOptions = {}) {
    this.lastConfigReloadSuccessful.set(1);
    // A counter with a closed set of labels is at 0 from the first scrape: a series that appears
    // at 1 is nothing to increase() and rate(), so the first store error after a restart, or the
    // first refused reload, would never show.
    for (const code of STREAM_ERROR_CODES) this.streamErrors.inc({ code }, 0);
    for (const operation of STORE_OPERATIONS) this.storeErrors.inc({ operation }, 0);
    for (const result of PURGE_RESULTS) this.purges.inc({ result }, 0);
    for (const result of CONFIG_RELOAD_RESULTS) this.configReloads.inc({ result }, 0);
    for (const failure of STALE_IF_ERROR_FAILURES) this.staleIfErrorAnswers.inc({ failure }, 0);
    for (const event of PERSISTED_QUERY_EVENTS) this.persistedQueries.inc({ event }, 0);
    // A failed invalidation is stale data served: the series to alert on must be there before it.
    for (const policy of INVALIDATING_POLICIES) {
      for (const from of INVALIDATION_SOURCES) for (const result of ['ok', 'failed']) this.invalidations.inc({ policy, from, result }, 0);
    }
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /** The Content-Type of `exposition()`. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Everything recorded, in the Prometheus text format. */
  exposition(): Promise<string> {
    return this.registry.metrics();
  }

  /** A request whose ext_proc stream ended: its outcome, why it passed, what the cache served. */
  recordRequest(request: CompletedRequest): void {
    if (request.outcome !== undefined) this.recordOutcome(request.outcome);
    if (request.outcome === 'PASS' && request.passReason !== undefined) this.passes.inc({ reason: request.passReason });
    if (request.outcome === 'ERROR' && request.errorCode !== undefined) this.errors.inc({ code: request.errorCode });
    this.addBytesServedFromCache(request.bytesServedFromCache);
  }

  /** On every request, so it only adds to a number. */
  recordOutcome(outcome: RequestOutcome): void {
    this.outcomeCounts.add(outcome);
  }

  observeDecisionSeconds(phase: MessagePhase, seconds: number): void {
    this.decisionSeconds.observe(phase, seconds);
  }

  addBytesServedFromCache(bytes: number): void {
    if (bytes > 0) this.bytesServedFromCache.inc(bytes);
  }

  streamOpened(): void {
    this.streamsActive.inc();
  }

  streamClosed(): void {
    this.streamsActive.dec();
  }

  recordStreamError(code: StreamErrorCode): void {
    this.streamErrors.inc({ code });
  }

  recordStreamAbandoned(): void {
    this.streamsAbandoned.inc();
  }

  recordStoreError(operation: StoreOperation): void {
    this.storeErrors.inc({ operation });
  }

  observeStoreSeconds(operation: StoreOperation, seconds: number): void {
    this.storeSeconds.observe({ operation }, seconds);
  }

  recordPurge(result: PurgeResult, entries: { removed: number; stale: number } = { removed: 0, stale: 0 }): void {
    this.purges.inc({ result });
    if (entries.removed > 0) this.purgedEntries.inc({ mode: 'hard' }, entries.removed);
    if (entries.stale > 0) this.purgedEntries.inc({ mode: 'soft' }, entries.stale);
  }

  recordInvalidation(policy: MutationPolicy, from: InvalidationSource, entries: number): void {
    this.invalidations.inc({ policy, from, result: 'ok' });
    if (entries > 0) this.invalidatedEntries.inc({ policy }, entries);
  }

  recordInvalidationFailure(policy: MutationPolicy, from: InvalidationSource): void {
    this.invalidations.inc({ policy, from, result: 'failed' });
  }

  recordPersistedQuery(event: PersistedQueryEvent): void {
    this.persistedQueries.inc({ event });
  }

  recordCoalesced(): void {
    this.coalescedRequests.inc();
    this.coalescedCount += 1;
  }

  recordStaleIfError(failure: StaleIfErrorFailure): void {
    this.staleIfErrorAnswers.inc({ failure });
  }

  /** Requests answered by coalescing so far (the dashboard shows it). */
  get coalesced(): number {
    return this.coalescedCount;
  }

  /** One lookup of a store with a replica-local cache; on every HIT, so it only adds to a number. */
  recordLocalCacheLookup(result: 'hit' | 'miss'): void {
    this.localCacheCounts.add(result);
  }

  /** Names of the configuration the origin schema lacked at its last load. */
  setConfigSchemaMismatches(count: number): void {
    this.configSchemaMismatches.set(count);
  }

  /** The last ping of the store: answered, or failed. */
  setStoreUp(up: boolean): void {
    this.storeUp.set(up ? 1 : 0);
  }

  setLocalCacheEnabled(enabled: boolean): void {
    this.localCacheEnabled.set(enabled ? 1 : 0);
  }

  observePurgeAcknowledgementSeconds(seconds: number): void {
    this.purgeAcknowledgementSeconds.observe(seconds);
  }

  recordConfigReload(result: ConfigReloadResult): void {
    this.configReloads.inc({ result });
    this.lastConfigReloadSuccessful.set(result === 'ok' ? 1 : 0);
  }
}

/**
 * Counts by label value, kept as plain numbers where they happen on every request and handed to a
 * prom-client counter when it is scraped: Counter.inc validates and hashes its labels on each call
 * (0.3 µs of a HIT, docs/performance.md). Values given up front are reported from the first
 * scrape, at zero until counted; others from their first count.
 */
class UnreportedCounts<Value extends string> {
  private readonly counts = new Map<Value, number>();

  constructor(reportedFromTheStart: readonly Value[]) {
    for (const value of reportedFromTheStart) this.counts.set(value, 0);
  }

  add(value: Value): void {
    this.counts.set(value, (this.counts.get(value) ?? 0) + 1);
  }

  /** Hands over what was counted since the last report, and starts again from zero. */
  report(increment: (value: Value, count: number) => void): void {
    for (const [value, count] of this.counts) {
      increment(value, count);
      this.counts.set(value, 0);
    }
  }
}
