import { createHash } from 'node:crypto';

/** Where a request is for, as the key holds it (src/http/requestTarget.ts). */
export interface KeyedTarget {
  /** `hostKey` of `:authority` and `:scheme`. */
  host: string;
  /** The configured endpoint: the path without its query string. */
  endpoint: string;
}

/**
 * The cache key (docs/graphql-caching.md, Cache key): scope bucket, host, endpoint path, operation
 * name, normalised document and canonical variables (their literal text, canonicalVariables.ts).
 * `Accept` is not in it: a cacheable answer has the same body under both GraphQL JSON types, and a
 * HIT is answered in a type the client accepts (README, HIT, MISS, PASS).
 */
export function cacheKey(bucket: string, target: KeyedTarget, operationName: string, normalisedDocument: string, canonicalVariables: string): string {
  const digest = createHash('sha256');
  for (const part of [target.host, target.endpoint, operationName, normalisedDocument]) digest.update(part).update('\u0000');
  return `${bucket}/${digest.update(canonicalVariables).digest('base64url')}`;
}
