import type { CachedResponse } from '../store/types.js';
import type { HeaderList } from '../http/headers.js';

export interface HttpResponse {
  status: number;
  headers: Array<[string, string]>;
  body: Buffer;
}

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

/**
 * A stored answer replayed: the stored bytes, their content type, `age` since it was stored, and
 * the stored headers with `overrides` replacing those of the same name.
 */
export function hitResponse(entry: CachedResponse, now: number, overrides: HeaderList): HttpResponse {
  const age = Math.max(0, Math.floor((now - entry.storedAt) / 1000));
  const overridden = new Set(overrides.map(([name]) => name));
  return {
    status: 200,
    headers: [
      ['content-type', entry.contentType],
      ...entry.headers.filter(([name]) => !overridden.has(name)),
      ...overrides.map(([name, value]): [string, string] => [name, value]),
      [CACHE_STATUS_HEADER, 'HIT'],
      ['age', String(age)],
    ],
    body: entry.body,
  };
}

/**
 * Origin response headers that are never stored or replayed: hop-by-hop ones (RFC 9110 section
 * 7.6.1), per-user ones, framing that is recomputed for the stored bytes, and what the proxy adds.
 */
const NOT_REPLAYED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'set-cookie',
  'authorization',
  'www-authenticate',
  'content-length',
  'content-type',
  'content-encoding',
  'date',
  'age',
  'x-request-id',
  CACHE_STATUS_HEADER,
]);

export function replayableHeaders(headers: HeaderList): Array<[string, string]> {
  return headers
    .filter(([name]) => !name.startsWith(':') && !name.startsWith('x-envoy-') && !NOT_REPLAYED.has(name))
    .map(([name, value]) => [name, value]);
}
