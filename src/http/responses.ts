/** An HTTP answer svc-cache gives itself (a HIT, or an error it owns). */
export interface HttpResponse {
  status: number;
  headers: Array<[string, string]>;
  body: Buffer;
}

/**
 * The `extensions.code` of an error svc-cache answers itself: a stable code clients and dashboards
 * can match on (docs/graphql-caching.md, Answers svc-cache gives itself).
 */
export type OwnErrorCode =
  | 'PAYLOAD_TOO_LARGE'
  | 'QUERY_TOO_LARGE'
  | 'QUERY_TOO_DEEP'
  | 'TOO_MANY_ALIASES'
  | 'METHOD_NOT_ALLOWED'
  | 'BAD_REQUEST'
  | 'UNAUTHENTICATED'
  | 'PURGE_NOT_APPLIED'
  | 'PURGE_UNAVAILABLE'
  | 'PERSISTED_QUERY_NOT_FOUND'
  | 'PERSISTED_QUERY_NOT_SUPPORTED'
  | 'AMBIGUOUS_REQUEST'
  | 'REQUEST_HEADERS_TOO_LARGE';

/** The response header that says HIT, MISS or PASS. */
export const CACHE_STATUS_HEADER = 'svc-cache';
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * An error svc-cache answers itself, for what it owns (docs/graphql-caching.md, Answers svc-cache
 * gives itself): GraphQL-shaped so clients show the message as they show any GraphQL error.
 */
export function graphQLErrorResponse(
  status: number,
  message: string,
  code: OwnErrorCode,
  extraHeaders: Array<[string, string]> = [],
): HttpResponse {
  const body = Buffer.from(JSON.stringify({ errors: [{ message, extensions: { code } }] }));
  return { status, headers: [['content-type', JSON_CONTENT_TYPE], ...extraHeaders], body };
}
