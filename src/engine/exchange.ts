import { hash } from 'node:crypto';
import type { DocumentNode, GraphQLSchema } from 'graphql';
import type { PersistedQueryRegistration } from '../apq/index.js';
import type { MutationPolicy } from '../config/index.js';
import type { HeaderList } from '../http/index.js';
import type { OwnErrorCode } from '../http/index.js';
import type { PreparedOperation } from '../invalidation/index.js';
import type { RequestOutcome } from '../observability/index.js';
import type { InvalidationMark } from '../store/index.js';
import type { Leadership } from './coalescing.js';
import type { EntryLifetime } from './originResponse.js';
import type { PassReason } from './passReason.js';
import type { CachePolicy } from './rules.js';

/**
 * One HTTP request as the engine sees it, from its headers to the end of its ext_proc stream: the
 * request head, the plan for the origin's response, the `svc-debug` explanation and the coalescing
 * leadership. The engine creates it (`DecisionEngine.begin`) and decides on it phase by phase; the
 * stream owns it and calls `dispose()` once it ends, however it ends (docs/ext-proc.md, Stream close).
 */
export class Exchange {
  private currentPlan: ResponsePlan | undefined;
  /** Present when the request asked for `svc-debug: 1` with a valid purge token. */
  explanation: Explanation | undefined;
  /** The purge token header this request carries, to strip before the origin (set by the engine). */
  tokenHeader: string | undefined;
  /**
   * A persisted query to register once the origin answers it with 200 and `data`, or a HIT shows
   * it did (README, Automatic persisted queries); cleared once done or ruled out.
   */
  registration: PersistedQueryRegistration | undefined;
  /** Where an expired entry is to be read again if the origin fails (README, Stale-if-error); cleared once the origin's answer is judged. */
  staleHold: StaleHold | undefined;
  private originHeaders: HeaderList = [];
  private leadership: Leadership | undefined;
  private disposed = false;
  private outcome: RequestOutcome | undefined;
  private passReason: PassReason | undefined;
  private errorCode: OwnErrorCode | undefined;
  private operationName: string | undefined;
  private documentHash: string | undefined;
  private forwardedAt: number | undefined;
  private originLatencyMs: number | undefined;
  private bytesServedFromCache = 0;

  /** `head` is undefined for a response whose request svc-cache never saw (an Envoy local reply). */
  constructor(
    readonly head: RequestHead | undefined,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /** What to do with the origin's response; undefined until the request is forwarded. */
  get plan(): ResponsePlan | undefined {
    return this.currentPlan;
  }

  /** The origin's response headers, once they came. */
  get responseHeaders(): HeaderList {
    return this.originHeaders;
  }

  /**
   * True once the request goes on to the origin as a pass: its body needs no reading, nor does the
   * answer unless `readsPassedAnswer`.
   */
  get passing(): boolean {
    return this.currentPlan?.kind === 'pass' && this.registration === undefined;
  }

  /** A pass that may run an operation svc-cache cannot see: its answer tells whether one ran (engine, passUnseen). */
  get readsPassedAnswer(): boolean {
    return this.currentPlan?.kind === 'pass' && this.currentPlan.unseen !== undefined;
  }

  /** The operation being decided, for the summary (`documentHash` from `documentHashOf`). */
  describeOperation(name: string, documentHash: string): void {
    this.operationName = name;
    this.documentHash = documentHash;
  }

  /**
   * This request leads the fetch that identical requests wait for, until `releaseLeadership`. A
   * stream cancelled while its lookup was in flight has been disposed before the lookup made it the
   * leader: it lets go at once, or identical requests would wait for a fetch that never comes until
   * the leader's timeout (30 s).
   */
  lead(leadership: Leadership | undefined): void {
    if (this.disposed) {
      leadership?.release();
      return;
    }
    this.leadership = leadership;
  }

  releaseLeadership(): void {
    this.leadership?.release();
    this.leadership = undefined;
  }

  /**
   * The request goes on to the origin; its response will be decided under `plan`. One forwarded
   * under a plan that stores nothing (a request asking for `no-store`) lets identical requests go
   * at once: they would wait for an entry it never writes.
   */
  forward(plan: ResponsePlan): void {
    this.currentPlan = plan;
    this.forwardedAt = this.clock();
    if (plan.kind !== 'store') this.releaseLeadership();
  }

  /** The origin's response headers arrived: the plan may have been downgraded by what they said. */
  responseArrived(headers: HeaderList, plan: ResponsePlan): void {
    this.owedWithoutResponse = undefined;
    this.originHeaders = headers;
    this.currentPlan = plan;
    if (this.forwardedAt !== undefined) this.originLatencyMs = this.clock() - this.forwardedAt;
    if (plan.kind !== 'store') this.releaseLeadership();
  }

  /** What became of the request, as far as it is known now. */
  settle(outcome: RequestOutcome, details: { passReason?: PassReason; errorCode?: OwnErrorCode; servedBytes?: number } = {}): void {
    this.outcome = outcome;
    this.passReason = details.passReason;
    this.errorCode = details.errorCode;
    this.bytesServedFromCache = details.servedBytes ?? 0;
  }

  /**
   * The stream ended after svc-cache answered the request phase and before any response phase:
   * Envoy answered the request itself (docs/ext-proc.md, Local replies). A PASS, unless the
   * request was already decided otherwise.
   */
  endWithoutResponsePhase(): void {
    if (this.outcome === undefined) this.settle('PASS', { passReason: 'no-response-phase' });
    this.endedWithoutResponse = true;
    const owed = this.owedWithoutResponse;
    this.owedWithoutResponse = undefined;
    owed?.();
  }

  /**
   * What a forwarded request that may change what the origin holds (a mutation) owes if no response
   * phase comes: Envoy may answer it itself after the origin ran it (its route timeout's 504). Run at
   * once when the stream already ended while the request was being decided: Envoy went on without
   * svc-cache past its message timeout, and forwarded the request as it came.
   */
  oweWithoutResponse(owed: (() => void) | undefined): void {
    if (owed !== undefined && this.endedWithoutResponse) owed();
    else this.owedWithoutResponse = owed;
  }

  private owedWithoutResponse: (() => void) | undefined;
  private endedWithoutResponse = false;

  /**
   * The stream ended after the response head and before its body reached svc-cache: Envoy gave
   * up on it (a reset, a body over its buffer) after the origin had answered. Runs what the body
   * was awaited for that must happen even so (`whenBodyLost`).
   */
  endWithoutResponseBody(): void {
    const lost = this.whenBodyLost;
    this.whenBodyLost = undefined;
    lost?.();
  }

  /** Set while an origin's answer must be read because it may show a change svc-cache cannot see. */
  whenBodyLost: (() => void) | undefined;

  /** The stream ended: lets go of what the exchange still holds. Safe to call more than once. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.releaseLeadership();
  }

  summary(): RequestSummary {
    return {
      outcome: this.outcome,
      passReason: this.outcome === 'PASS' ? this.passReason : undefined,
      errorCode: this.errorCode,
      operationName: this.operationName,
      documentHash: this.documentHash,
      originLatencyMs: this.originLatencyMs,
      bytesServedFromCache: this.bytesServedFromCache,
    };
  }
}

/** What one request came to, emitted once its ext_proc stream ends. */
/**
 * The first 12 hex digits of the SHA-256 of a normalised document's digest and the operation's name, worked out once per parsed
 * document (documents are remembered by query text) rather than once per request: a HIT repeats a
 * popular document again and again.
 */
export function documentHashOf(selected: { document: DocumentNode; name: string; normalised: string }): string {
  let documentHash = hashesByDocument.get(selected.document);
  if (documentHash === undefined) {
    // One-shot, as the cache key's (cacheKey.ts): no Hash object per new document.
    // The name too: the normalised digest is the whole document's, which each of its operations shares.
    documentHash = hash('sha256', `${selected.name}\u0000${selected.normalised}`, 'hex').slice(0, 12);
    hashesByDocument.set(selected.document, documentHash);
  }
  return documentHash;
}

const hashesByDocument = new WeakMap<DocumentNode, string>();

export interface RequestSummary {
  /** Undefined: the stream ended undecided. */
  outcome: RequestOutcome | undefined;
  passReason: PassReason | undefined;
  /** svc-cache's own error code, when it answered with one. */
  errorCode: string | undefined;
  /** '' for an anonymous operation; undefined when the request was not read as GraphQL. */
  operationName: string | undefined;
  /** The first 12 hex digits of the SHA-256 of the normalised document. */
  documentHash: string | undefined;
  /** Forwarded requests: from the forward decision to the origin's response headers. */
  originLatencyMs: number | undefined;
  bytesServedFromCache: number;
}

export interface RequestHead {
  method: string;
  /** `:path`, query string included. */
  path: string;
  headers: HeaderList;
  /** False when the headers ended the request (Envoy's `end_of_stream`). */
  hasBody: boolean;
}

/** What svc-cache answered, when the origin was not asked: `svc-cache: HIT`, MISS or PASS. */
export type CacheStatus = Exclude<RequestOutcome, 'ERROR'>;

/** What the engine remembers between a forwarded request and the origin's response. */
export type ResponsePlan = PassPlan | StorePlan | MutationPlan | BatchPlan;

/** Not stored. The body is needed only to remove fields svc-cache added to the query. */
export interface PassPlan {
  kind: 'pass';
  reason: PassReason;
  added?: PreparedOperation;
  /**
   * Mutations an origin might run from a request svc-cache could not read: the `type` tags of their
   * root fields' types, invalidated under `policy` once it answered; `ofKnownFields` those of the
   * root fields the schema has alone (rootFieldTypesOwed).
   */
  unread?: { policy: Exclude<MutationPolicy, 'None'>; tags: string[]; ofKnownFields: string[] };
  /**
   * The origin may run an operation svc-cache cannot see (a stored document's id): an answer showing
   * a mutation may have run, read up to the response body limit, empties the store.
   */
  unseen?: { maxResponseBodyBytes: number };
  /** Set once the head showed a body to read for `unseen`: GraphQL JSON svc-cache can hold, of a 2xx. */
  readUnseen?: true;
}

/** What `svc-debug-*` response headers show: what the decision was based on. */
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
  /** The request's variables, as sent: list tags read the list fields' arguments with them. */
  variables: Record<string, unknown>;
  mark: InvalidationMark;
  policy: CachePolicy;
  schema: GraphQLSchema;
  prepared: PreparedOperation;
  /** Headers that cached answers of this scope carry (vary, cache-control). */
  scopeHeaders: Array<[string, string]>;
  /** Request headers the cache key already covers; an origin `vary` on anything else is not cacheable. */
  keyedRequestHeaders: ReadonlySet<string>;
  limits: { maxResponseBodyBytes: number; ignoreOriginCacheControl: boolean };
  /** How long the entry is fresh, then served stale: set once the origin's response headers allowed storing it. */
  lifetime?: EntryLifetime;
}

/** A mutation whose answer names what it changed. */
export interface MutationPlan {
  kind: 'mutation';
  schema: GraphQLSchema;
  prepared: PreparedOperation;
  policy: MutationPolicy;
  /** Past this an answer is not read: the root fields' types are invalidated instead. */
  maxResponseBodyBytes: number;
  /** The answer came with a 5xx (whatRan). */
  serverError?: true;
}

/** A batch (a JSON array of operations) holding mutations: never stored, its answers invalidate. */
export interface BatchPlan {
  kind: 'batch';
  /** Per element of the batch, in order: its mutation plan, or undefined for an element that is none. */
  mutations: Array<MutationPlan | undefined>;
  /** The elements that name no query: the origin may run a stored document svc-cache cannot see. */
  unseen: readonly number[];
  /** Per element, the APQ hash it sent with its text, registered once its answer shows data. */
  registrations?: ReadonlyArray<PersistedQueryRegistration | undefined>;
  /** Past this the answers are not read: each mutation invalidates its root fields' types. */
  maxResponseBodyBytes: number;
  /** The answer came with a 5xx (whatRan). */
  serverError?: true;
}

/**
 * What a MISS that found an expired entry holds for an origin that fails (README, Stale-if-error):
 * where to read the entry again then, so that a purge or invalidation meanwhile is honoured.
 */
export interface StaleHold {
  /** The entry's cache key. */
  key: string;
  /** Seconds past its expiry an entry may answer for a failing origin, from the rules this request was decided under. */
  staleIfError: number;
  /** The scope headers of this request, as on a HIT. */
  scopeHeaders: Array<[string, string]>;
}
