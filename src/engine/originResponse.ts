import { storability } from '../http/index.js';
import { headerValue, mediaType, type HeaderList } from '../http/index.js';
import type { PassReason } from './passReason.js';

/**
 * Whether the origin's response headers allow storing it, and for how long (docs/graphql-caching.md,
 * Cacheability): RFC 9111 decides what a shared cache may store (src/http/cacheControl.ts), the
 * rules cap the lifetime, and svc-cache's own needs (a complete GraphQL JSON result it can read
 * and replay to anyone in the scope) come on top.
 */

export interface StoreContext {
  /** Lower-case names of the request headers whose whole value the key covers or the HIT negotiates. */
  keyedRequestHeaders: ReadonlySet<string>;
  maxResponseBodyBytes: number;
  /** The matched rules' maxAge: the longest an entry may live. */
  ruleMaxAge: number;
  /** README, Every key: the origin's freshness then no longer shortens or refuses the lifetime. */
  ignoreOriginCacheControl: boolean;
  /** Epoch milliseconds, for `Expires` without a valid `Date`. */
  now: number;
}

/** Content types of answers that stream (subscriptions, `@defer`, `@stream`): never read, never stored. */
const STREAMING_TYPES = new Set(['text/event-stream', 'multipart/mixed']);

export function isStreaming(headers: HeaderList): boolean {
  return STREAMING_TYPES.has(mediaType(headerValue(headers, 'content-type')));
}

export function isGraphQLJson(headers: HeaderList): boolean {
  const type = mediaType(headerValue(headers, 'content-type'));
  return type === 'application/json' || type === 'application/graphql-response+json';
}

/** The body is compressed (or otherwise encoded): svc-cache reads and stores identity bodies only. */
export function isEncoded(headers: HeaderList): boolean {
  const encoding = headerValue(headers, 'content-encoding');
  return encoding !== undefined && encoding.trim().toLowerCase() !== 'identity';
}

/** Why a response with these headers must not be stored, or how many seconds it may be stored for. */
export function storeVerdict(status: number, headers: HeaderList, context: StoreContext): { reason: PassReason } | { maxAge: number } {
  if (status !== 200) return { reason: 'origin-status' };
  if (isStreaming(headers)) return { reason: 'origin-streaming' };
  if (!isGraphQLJson(headers)) return { reason: 'origin-content-type' };
  const storable = storability(status, headers, context);
  let originSeconds: number | undefined;
  if (storable.storable) originSeconds = storable.freshSeconds;
  else if (!(context.ignoreOriginCacheControl && LIFETIME_REASONS.has(storable.reason))) return { reason: storable.reason };
  if (headerValue(headers, 'set-cookie') !== undefined) return { reason: 'origin-set-cookie' };
  if (isEncoded(headers)) return { reason: 'origin-encoded' };
  if (Number(headerValue(headers, 'content-length')) > context.maxResponseBodyBytes) return { reason: 'response-too-large' };
  if (context.ignoreOriginCacheControl || originSeconds === undefined) return { maxAge: context.ruleMaxAge };
  return { maxAge: Math.min(context.ruleMaxAge, originSeconds) };
}

/**
 * What `cache.ignoreOriginCacheControl` sets aside: the origin's say on how long (README, Every key),
 * never its say on whether (`no-store`, `private`, `no-cache`, `Pragma`, `Vary`).
 */
const LIFETIME_REASONS: ReadonlySet<PassReason> = new Set(['origin-max-age-zero', 'origin-max-age-invalid', 'origin-expired']);
