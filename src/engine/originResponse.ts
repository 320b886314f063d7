import { contentCoding, hasInvalidAge, staleLimits, storability, initialAgeSeconds } from '../http/index.js';
import { headerValue, mediaType, type HeaderList } from '../http/index.js';
import type { PassReason } from './passReason.js';
import type { CachePolicy } from './rules.js';

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
  /** The matched rules' maxAge, swr and staleIfError: the longest an entry may be fresh, then served stale. */
  rules: Pick<CachePolicy, 'maxAge' | 'swr' | 'staleIfError'>;
  /** README, Every key: the origin's freshness then no longer shortens or refuses the lifetime. */
  ignoreOriginCacheControl: boolean;
  /** Epoch milliseconds: the answer's age from its `Date`, and `Expires` without a valid `Date`. */
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

/**
 * The body is compressed (or otherwise encoded): svc-cache reads and stores identity bodies only. An
 * empty `content-encoding` lists no coding (RFC 9110 section 8.4: a list of codings), as clients read it.
 */
export function isEncoded(headers: HeaderList): boolean {
  return contentCoding(headers) !== 'identity';
}

/**
 * How long a stored answer is fresh (`maxAge`), then how long past that it may be served stale while
 * one request refreshes it (`swr`) or in place of an origin that fails (`staleIfError`), in seconds.
 */
export interface EntryLifetime {
  maxAge: number;
  swr: number;
  staleIfError: number;
}

/** Why a response with these headers must not be stored, or for how long it may be stored and served. */
export function storeVerdict(status: number, headers: HeaderList, context: StoreContext): { reason: PassReason } | EntryLifetime {
  if (status !== 200) return { reason: 'origin-status' };
  if (isStreaming(headers)) return { reason: 'origin-streaming' };
  if (!isGraphQLJson(headers)) return { reason: 'origin-content-type' };
  const storable = storability(status, headers, context);
  let originSeconds: number | undefined;
  if (storable.storable) originSeconds = storable.freshSeconds;
  else if (!(context.ignoreOriginCacheControl && LIFETIME_REASONS.has(storable.reason))) return { reason: storable.reason };
  // Set-Cookie2 (RFC 2965, obsolete) still sets a cookie in the clients that read it.
  if (headerValue(headers, 'set-cookie') !== undefined || headerValue(headers, 'set-cookie2') !== undefined) return { reason: 'origin-set-cookie' };
  if (isEncoded(headers)) return { reason: 'origin-encoded' };
  if (Number(headerValue(headers, 'content-length')) > context.maxResponseBodyBytes) return { reason: 'response-too-large' };
  const { rules } = context;
  // RFC 9111 section 4.2: the rule's lifetime, as any lifetime, is compared with the answer's age,
  // which an upstream cache's `Age` or the origin's `Date` starts (`originSeconds` is already less it).
  // An `Age` that cannot be read may be any age: expired, as `freshness` takes it with the origin's own lifetime.
  if (!context.ignoreOriginCacheControl && hasInvalidAge(headers)) return { reason: 'origin-expired' };
  const ruleSeconds = context.ignoreOriginCacheControl ? rules.maxAge : rules.maxAge - initialAgeSeconds(headers, context.now);
  const maxAge = context.ignoreOriginCacheControl || originSeconds === undefined ? ruleSeconds : Math.min(ruleSeconds, originSeconds);
  if (maxAge <= 0) return { reason: 'origin-expired' };
  // The origin's bounds on serving stale hold under ignoreOriginCacheControl too (LIFETIME_REASONS).
  const origin = staleLimits(headers);
  return { maxAge, swr: atMost(rules.swr, origin.whileRevalidate), staleIfError: atMost(rules.staleIfError, origin.ifError) };
}

function atMost(ruleSeconds: number, originSeconds: number | undefined): number {
  return originSeconds === undefined ? ruleSeconds : Math.min(ruleSeconds, originSeconds);
}

/**
 * What `cache.ignoreOriginCacheControl` sets aside: the origin's say on how long it is fresh (README,
 * Every key), never its say on whether (`no-store`, `private`, `no-cache`, `Pragma`, `Vary`) nor on
 * serving it stale.
 */
const LIFETIME_REASONS: ReadonlySet<PassReason> = new Set(['origin-max-age-zero', 'origin-max-age-invalid', 'origin-expired']);
