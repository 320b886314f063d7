import { createHash } from 'node:crypto';
import { canonicalJson } from '../graphql/canonicalJson.js';
import { headerValue, type HeaderList } from '../http/headers.js';

/**
 * The cache key (docs/graphql-caching.md, Cache key): scope bucket, `Accept` (the GraphQL over HTTP spec gives
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

export function normalisedAccept(headers: HeaderList): string {
  const accept = headerValue(headers, 'accept');
  return accept === undefined || accept.trim() === '' ? '*/*' : accept.replace(/\s+/g, '').toLowerCase();
}
