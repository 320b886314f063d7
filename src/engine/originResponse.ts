import { headerValue, mediaType, type HeaderList } from '../http/headers.js';
import type { PassReason } from './passReason.js';

/**
 * Whether the origin's response headers allow storing it, and for how long (docs/graphql-caching.md,
 * Cacheability).
 */

export function isGraphQLJson(headers: HeaderList): boolean {
  const type = mediaType(headerValue(headers, 'content-type'));
  return type === 'application/json' || type === 'application/graphql-response+json';
}

/** The body is compressed (or otherwise encoded): svc-cache reads and stores identity bodies only. */
export function isEncoded(headers: HeaderList): boolean {
  const encoding = headerValue(headers, 'content-encoding');
  return encoding !== undefined && encoding.trim().toLowerCase() !== 'identity';
}

/** Why a response with these headers must not be stored, or undefined when it may be. */
export function uncacheableReason(
  status: number,
  headers: HeaderList,
  keyedRequestHeaders: ReadonlySet<string>,
  maxResponseBodyBytes: number,
): PassReason | undefined {
  if (status !== 200) return 'origin-status';
  if (!isGraphQLJson(headers)) return 'origin-content-type';
  const cacheControl = parseCacheControl(headerValue(headers, 'cache-control'));
  if (cacheControl.has('no-store')) return 'origin-no-store';
  // svc-cache does not revalidate, and a no-cache answer must not be reused without it (RFC 9111 section 5.2.2.4).
  if (cacheControl.has('no-cache')) return 'origin-no-cache';
  if (cacheControl.has('private')) return 'origin-private';
  if (headerValue(headers, 'set-cookie') !== undefined) return 'origin-set-cookie';
  if (isEncoded(headers)) return 'origin-encoded';
  if (varyOutsideKey(headerValue(headers, 'vary'), keyedRequestHeaders)) return 'origin-vary';
  if (Number(headerValue(headers, 'content-length')) > maxResponseBodyBytes) return 'response-too-large';
  return undefined;
}

/** The rule's maxAge, shortened by a shorter origin `s-maxage` or `max-age` unless told to ignore them. */
export function freshLifetime(ruleMaxAge: number, headers: HeaderList, ignoreOriginCacheControl: boolean): number {
  if (ignoreOriginCacheControl) return ruleMaxAge;
  const directives = parseCacheControl(headerValue(headers, 'cache-control'));
  const origin = directives.get('s-maxage') ?? directives.get('max-age');
  const originSeconds = origin === undefined ? NaN : Number.parseInt(origin, 10);
  return Number.isFinite(originSeconds) ? Math.min(ruleMaxAge, originSeconds) : ruleMaxAge;
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
