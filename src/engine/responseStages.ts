import type { HeaderList } from '../http/index.js';
import { contentCoding, decodedWithin, headerValue, initialAgeSeconds } from '../http/index.js';
import { isPlainObject } from '../util/index.js';
import { stripAddedFields, type PreparedOperation } from '../invalidation/index.js';
import { responseTags } from '../invalidation/index.js';
import { invalidationTag } from '../invalidation/index.js';
import type { CachedResponse } from '../store/index.js';
import type { PassPlan, ResponsePlan, StorePlan } from './exchange.js';
import { isEncoded, isGraphQLJson, isStreaming, storeVerdict, type EntryLifetime } from './originResponse.js';
import type { PassReason } from './passReason.js';
import { headersOfRewrittenBody, replayableHeaders } from './responses.js';

/**
 * What the origin's response comes to under a plan: first by its headers (whether the body is
 * needed at all), then by its body (docs/graphql-caching.md, Cacheability).
 */

/**
 * The plan for the body once the response headers are known: a pass when they rule storing out, a
 * store plan knowing its entry's lifetime, or, for a mutation whose answer cannot be read (streamed,
 * not GraphQL JSON, encoded, bodiless), a pass that invalidates by its root fields' types.
 */
export function planAfterResponseHead(plan: ResponsePlan, status: number, headers: HeaderList, endOfStream: boolean, now: number): ResponsePlan {
  switch (plan.kind) {
    case 'pass':
      return plan.unseen && isSuccess(status) && isReadable(headers) && isHoldable(headers, endOfStream, plan.unseen.maxResponseBodyBytes) ? { ...plan, readUnseen: true } : plan;
    case 'mutation':
      if (!isReadable(headers) || !isHoldable(headers, endOfStream, plan.maxResponseBodyBytes)) return { kind: 'pass', reason: 'mutation', ...addedFields(plan.prepared) };
      return status >= 500 ? { ...plan, serverError: true } : plan;
    case 'batch':
      // Elements svc-cache could not see ran nothing to answer for when the origin refused the batch.
      if (!isReadable(headers) || !isHoldable(headers, endOfStream, plan.maxResponseBodyBytes)) return { kind: 'pass', reason: 'batch' };
      if (isSuccess(status)) return plan;
      // Its mutations read their answers (whatRan); the elements svc-cache cannot see are taken as
      // not run, as alone (decideResponseHead): flushing the store on a 5xx would wipe what
      // stale-if-error serves through an outage.
      return { ...plan, unseen: [], ...(status >= 500 && { serverError: true as const }) };
    case 'store': {
      const verdict = storeVerdict(status, headers, {
        keyedRequestHeaders: plan.keyedRequestHeaders,
        maxResponseBodyBytes: plan.limits.maxResponseBodyBytes,
        rules: plan.policy,
        ignoreOriginCacheControl: plan.limits.ignoreOriginCacheControl,
        now,
      });
      if ('reason' in verdict) return { kind: 'pass', reason: verdict.reason, ...addedFields(plan.prepared) };
      if (endOfStream) return { kind: 'pass', reason: 'origin-no-body', ...addedFields(plan.prepared) };
      return { ...plan, lifetime: verdict };
    }
  }
}

/**
 * Whether the body under this plan is worth Envoy sending: to read it, or to strip the fields
 * svc-cache added from whatever JSON the origin answered with (any content type, and a content
 * coding it can undo: an origin may compress although svc-cache asked for identity).
 */
export function wantsResponseBody(plan: ResponsePlan, headers: HeaderList, endOfStream: boolean, maxBodyBytes: number): boolean {
  if (plan.kind !== 'pass' || plan.readUnseen) return true;
  return plan.added !== undefined && isHoldable(headers, endOfStream, maxBodyBytes) && contentCoding(headers) !== undefined;
}

/**
 * What an answer to a mutation shows of whether it ran: its `data` (`has-data`); `nothing` when it
 * has no `data` at all, a request error (GraphQL spec section 7.1.2, as when the origin refuses a
 * mutation in validation), which any client could send, so it invalidates nothing; `unknown` when
 * that came with a 5xx, which a gateway in front of the origin may answer when it gave up on a
 * mutation the origin went on running (Apollo Router's timeout answers so).
 */
export function whatRan(result: Record<string, unknown>, plan: { serverError?: true }): 'has-data' | 'nothing' | 'unknown' {
  if (Object.hasOwn(result, 'data')) return 'has-data';
  return plan.serverError === true ? 'unknown' : 'nothing';
}

/** A 2xx status: the origin ran the request (a 4xx or 5xx ran nothing svc-cache must answer for). */
export function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

/**
 * Whether an answer to an operation svc-cache could not see shows that it may have changed data: it
 * has `data` with something in it, or `data: null` (a request error has no `data`: GraphQL over
 * HTTP). Its root keys cannot tell a query from a mutation, since an alias may name a mutation's
 * field as a query's (`todos: addTodo(…)`). An answer that cannot be read may be a mutation's.
 */
export function ranUnseenMutation(result: unknown): boolean {
  if (!isPlainObject(result)) return true;
  if (whatRan(result, {}) === 'nothing') return false;
  const { data } = result;
  return !isPlainObject(data) || Object.keys(data).length > 0;
}

/** A body svc-cache can read: GraphQL JSON, not encoded. */
export function isReadable(headers: HeaderList): boolean {
  return isGraphQLJson(headers) && !isEncoded(headers);
}

/**
 * A body svc-cache may have Envoy hold for it: one that comes, does not stream, and declares no
 * more bytes than `limits.maxResponseBodyBytes`, below Envoy's buffer limit, past which holding it
 * is Envoy's 500 in place of the answer (README, Envoy settings and why). A larger answer passes
 * untouched: with any fields svc-cache added to the query.
 */
export function isHoldable(headers: HeaderList, endOfStream: boolean, maxBodyBytes: number): boolean {
  return !endOfStream && !isStreaming(headers) && !(Number(headerValue(headers, 'content-length')) > maxBodyBytes);
}

/**
 * The body the client gets under a pass plan: the origin's, less any fields svc-cache added, then
 * sent as identity when they were cut from a compressed body (`decoded`). A body that cannot be
 * decoded within `maxBodyBytes` goes as it came.
 */
export function passedBody(plan: PassPlan, headers: HeaderList, body: Buffer, maxBodyBytes: number): { body: Buffer; decoded: boolean } {
  if (!plan.added) return { body, decoded: false };
  const coding = contentCoding(headers);
  if (coding === 'identity' || coding === undefined) return { body: stripAddedFields(plan.added, body), decoded: false };
  const identity = decodedWithin(body, coding, maxBodyBytes);
  if (identity === undefined || identity === 'too-large') return { body, decoded: false };
  const stripped = stripAddedFields(plan.added, identity);
  return stripped === identity ? { body, decoded: false } : { body: stripped, decoded: true };
}

/** The entry to store from an origin answer, or why it cannot be stored. */
export function entryToStore(
  plan: StorePlan,
  responseHeaders: HeaderList,
  body: Buffer,
  now: number,
): { entry: CachedResponse; tags: string[]; ttlSeconds: number } | { reason: PassReason } {
  if (body.length > plan.limits.maxResponseBodyBytes) return { reason: 'response-too-large' };
  const result = parseGraphQLResult(body);
  if (!result) return { reason: 'response-not-graphql' };
  if (result.errors !== undefined) return { reason: 'response-has-errors' };
  if (!isPlainObject(result.data)) return { reason: 'response-not-graphql' };
  const tags = responseTags(plan.schema, plan.prepared, result, plan.operationName, plan.variables);
  if (!tags) return { reason: 'untaggable-response' };
  const lifetime = plan.lifetime ?? plan.policy;
  if (lifetime.maxAge <= 0) return { reason: 'origin-max-age-zero' };
  const clientBody = stripAddedFields(plan.prepared, body);
  // Dated from when the origin made it, so that a HIT's `age` counts an upstream cache's time too
  // (RFC 9111 section 4.2.3); its windows, from then, are as long after now as before.
  const upstreamAgeMs = initialAgeSeconds(responseHeaders, now) * 1000;
  const entry: CachedResponse = {
    body: clientBody,
    encoding: 'identity',
    identityLength: clientBody.length,
    contentType: headerValue(responseHeaders, 'content-type') ?? 'application/json',
    headers: clientBody === body ? replayableHeaders(responseHeaders) : headersOfRewrittenBody(replayableHeaders(responseHeaders)),
    storedAt: now - upstreamAgeMs,
    maxAge: lifetime.maxAge + upstreamAgeMs / 1000,
    swr: lifetime.swr,
    staleIfError: lifetime.staleIfError,
  };
  return { entry, tags: [invalidationTag.bucket(plan.bucket), ...tags], ttlSeconds: retentionSeconds(lifetime) };
}

/**
 * How long an entry stays in the store: fresh for `maxAge`, then kept as long as a stale answer may
 * still be served, while it is refreshed (`swr`) or when the origin fails (`staleIfError`).
 */
export function retentionSeconds(lifetime: EntryLifetime): number {
  return lifetime.maxAge + Math.max(lifetime.swr, lifetime.staleIfError);
}

/** The answers of a batch, one per operation, or undefined when the body is not such an array. */
export function parseBatchResults(body: Buffer, operations: number): unknown[] | undefined {
  try {
    const results: unknown = JSON.parse(body.toString('utf8'));
    return Array.isArray(results) && results.length === operations ? results : undefined;
  } catch {
    return undefined;
  }
}

export function parseGraphQLResult(body: Buffer): Record<string, unknown> | undefined {
  try {
    const result: unknown = JSON.parse(body.toString('utf8'));
    return isPlainObject(result) ? result : undefined;
  } catch {
    return undefined;
  }
}

/** The fields svc-cache added to the query, to strip from a passed answer. */
export function addedFields(prepared: PreparedOperation): { added?: PreparedOperation } {
  return prepared.rewritten ? { added: prepared } : {};
}

/** A replacement body for the client only when it differs from what the origin sent. */
export function withBody(clientBody: Buffer, originBody: Buffer): { body?: Buffer } {
  return clientBody === originBody ? {} : { body: clientBody };
}
