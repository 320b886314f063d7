/** An HTTP answer svc-cache gives itself (a HIT, or an error it owns). */
export interface HttpResponse {
  status: number;
  headers: Array<[string, string]>;
  body: Buffer;
}

/** The response header that says HIT, MISS or PASS. */
export const CACHE_STATUS_HEADER = 'svc-cache';
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * An error svc-cache answers itself, for what it owns (DESIGN.md): GraphQL-shaped so clients
 * show the message as they show any GraphQL error.
 */
export function graphQLErrorResponse(
  status: number,
  message: string,
  code: string,
  extraHeaders: Array<[string, string]> = [],
): HttpResponse {
  const body = Buffer.from(JSON.stringify({ errors: [{ message, extensions: { code } }] }));
  return { status, headers: [['content-type', JSON_CONTENT_TYPE], ...extraHeaders], body };
}
