import type { CachedResponse } from '../store/types.js';
import type { HeaderList } from '../http/headers.js';
import { CACHE_STATUS_HEADER, type HttpResponse } from '../http/responses.js';

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
