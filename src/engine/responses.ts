import type { BodyEncoding, CachedResponse } from '../store/index.js';
import { headerValue, varyNames, type HeaderList } from '../http/index.js';
import type { Explanation } from './exchange.js';
import type { PassReason } from './passReason.js';
import { CACHE_STATUS_HEADER, type HttpResponse } from '../http/index.js';

/** A stored entry as one request is answered with it: in a type and content coding it accepts, with its header overrides. */
export interface Replay {
  /** The entry, in the content type negotiated with the client. */
  entry: CachedResponse;
  /** Headers replacing stored ones of the same name (scope headers, svc-debug). */
  overrides: Array<[string, string]>;
  /** The body in the content coding negotiated with the client. */
  served: { body: Buffer; encoding: BodyEncoding };
}

/**
 * A stored answer replayed: `served` (the stored bytes, or them decompressed for a client that does
 * not accept their coding) with `content-encoding` when encoded, the content type, `age` since the
 * origin made it (responseStages.ts dates the entry so), and the stored headers with `overrides` replacing those of the same name. An entry stored
 * compressed is answered according to `accept-encoding`, which `vary` then says.
 */
export function hitResponse(entry: CachedResponse, now: number, overrides: HeaderList, served: { body: Buffer; encoding: BodyEncoding }): HttpResponse {
  const age = Math.max(0, Math.floor((now - entry.storedAt) / 1000));
  const overridden = new Set(overrides.map(([name]) => name));
  const encoded = served.encoding !== 'identity';
  const headers: Array<[string, string]> = [['content-type', entry.contentType]];
  for (const [name, value] of entry.headers) {
    const replayed = encoded ? withOtherBytes(name, value) : value;
    if (!overridden.has(name) && replayed !== undefined) headers.push([name, replayed]);
  }
  for (const [name, value] of overrides) headers.push([name, value]);
  if (encoded) headers.push(['content-encoding', served.encoding]);
  if (entry.encoding !== 'identity') varyOnAcceptEncoding(headers);
  headers.push([CACHE_STATUS_HEADER, 'HIT'], ['age', String(age)]);
  return { status: 200, headers, body: served.body };
}

/**
 * A HIT's answer to a GET whose preconditions it meets (preconditionVerdict): 304 with the headers the
 * 200 would have (RFC 9110 section 15.4.5: `etag`, `cache-control`, `vary`, `age` and the rest),
 * but none describing a body it does not have: a cache updating its stored answer from a 304 must
 * not take another `content-encoding` for the bytes it kept.
 */
export function notModifiedResponse(response: HttpResponse): HttpResponse {
  return { status: 304, headers: response.headers.filter(([name]) => !OF_THE_BODY.has(name)), body: Buffer.alloc(0) };
}

const OF_THE_BODY: ReadonlySet<string> = new Set(['content-type', 'content-encoding', 'content-length']);

/**
 * The origin's digests of the bytes it sent (RFC 9530 `Content-Digest` and `Repr-Digest`, which
 * cover the content coding, RFC 3230 `Digest`, `Content-MD5`): a HIT that sends the stored
 * compressed bytes leaves them out rather than send digests its bytes fail.
 */
const OF_THE_IDENTITY_BYTES: ReadonlySet<string> = new Set(['content-digest', 'repr-digest', 'digest', 'content-md5']);

/**
 * The origin's headers for a body svc-cache rewrote (the members it added for tagging cut out,
 * docs/graphql-caching.md, Invalidation): without its digests, which the bytes sent would fail,
 * and with its ETag weakened, since a strong one names the exact bytes the origin sent
 * (`OF_THE_IDENTITY_BYTES`, `weakened`).
 */
export function headersOfRewrittenBody(headers: HeaderList): Array<[string, string]> {
  return headers.flatMap(([name, value]): Array<[string, string]> => {
    const kept = withOtherBytes(name, value);
    return kept === undefined ? [] : [[name, kept]];
  });
}

/** What `headersOfRewrittenBody` changes, as changes to the origin's headers on their way to the client. */
export function rewrittenBodyChanges(headers: HeaderList): HeaderChanges {
  const etag = headerValue(headers, 'etag');
  return { set: etag === undefined ? [] : [['etag', weakened(etag)]], remove: namesAmong(headers, (name) => OF_THE_IDENTITY_BYTES.has(name)) };
}

/**
 * An origin header's value beside other bytes than the origin sent (compressed, or rewritten): none
 * for its digests of its own bytes, its ETag weakened, any other as it is.
 */
function withOtherBytes(name: string, value: string): string | undefined {
  if (OF_THE_IDENTITY_BYTES.has(name)) return undefined;
  return name === 'etag' ? weakened(value) : value;
}

/** The names of `headers` that pass `test`, each once: what a HeaderChanges removes. */
function namesAmong(headers: HeaderList, test: (name: string) => boolean): string[] {
  return [...new Set(headers.map(([name]) => name).filter(test))];
}

/**
 * A strong validator names one representation's exact bytes (RFC 9110 section 8.8.1): the
 * compressed bytes are another, so a HIT that sends them weakens it, as nginx does when it gzips.
 */
function weakened(etag: string): string {
  const trimmed = etag.trim();
  return trimmed.startsWith('W/') ? trimmed : `W/${trimmed}`;
}

/** Adds `accept-encoding` to the last `vary` (or a `vary` of its own) unless it is listed already or `vary` is `*`. */
function varyOnAcceptEncoding(headers: Array<[string, string]>): void {
  const listed = varyNames(headers);
  if (listed.includes('*') || listed.includes('accept-encoding')) return;
  const last = headers.findLastIndex(([name]) => name === 'vary');
  // A new pair: the others may be the stored entry's own.
  if (last < 0) headers.push(['vary', 'accept-encoding']);
  else headers[last] = ['vary', headers[last]![1].trim() === '' ? 'accept-encoding' : `${headers[last]![1]}, accept-encoding`];
}

/**
 * Origin response headers that are never stored or replayed: hop-by-hop ones (RFC 9110 section
 * 7.6.1, those `connection` names too; every `proxy-*` besides, `replayableHeaders`), per-user ones
 * (`authentication-info` answers one client's credentials, `clear-site-data` clears one browser's),
 * framing that is recomputed for the stored bytes, and what the proxy adds (every `x-envoy-*`,
 * and svc-cache's own: isSvcCacheHeader, `replayableHeaders`). RFC 9111 section 3.1 forbids storing
 * `proxy-authentication-info` by name. `date` is kept: it is when the origin made the answer, which
 * a HIT passes on as any cache does (RFC 9110 section 6.6.1), so that a cache after svc-cache counts
 * the answer's age from it as svc-cache did (initialAgeSeconds). An origin's `host` (a response
 * header no client reads) is one Envoy's mutation rules refuse: replayed, it would count a rejected
 * mutation on every HIT (docs/ext-proc.md, Header mutations).
 */
const NOT_REPLAYED = new Set([
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'set-cookie',
  'set-cookie2',
  'authorization',
  'www-authenticate',
  'authentication-info',
  'clear-site-data',
  'content-length',
  'content-type',
  'content-encoding',
  'age',
  'x-request-id',
  'host',
]);

export function replayableHeaders(headers: HeaderList): Array<[string, string]> {
  const nominated = connectionOptions(headers);
  return headers
    .filter(([name]) => !name.startsWith(':') && !PROXY_PREFIXES.some((prefix) => name.startsWith(prefix)) && !isSvcCacheHeader(name) && !NOT_REPLAYED.has(name) && !nominated.has(name))
    .map(([name, value]) => [name, value]);
}

const PROXY_PREFIXES = ['x-envoy-', 'proxy-'];

/** svc-cache's own response headers: `svc-cache`, `svc-cache-stale` and the rest, `svc-debug-*`. */
function isSvcCacheHeader(name: string): boolean {
  return name === CACHE_STATUS_HEADER || name.startsWith(`${CACHE_STATUS_HEADER}-`) || name.startsWith('svc-debug-');
}

/**
 * The changes to an origin's answer, and the origin's own copies of svc-cache's headers removed, as
 * a HIT never replays them (replayableHeaders): a client must not take an origin's `svc-cache`,
 * `svc-cache-stale` or `svc-debug-pass-reason` for svc-cache's, also when svc-cache leaves its own
 * out to fit Envoy's limits (headerRoom.ts). Envoy removes before it sets (docs/ext-proc.md, Header
 * mutations), so the headers the changes set are svc-cache's whatever the origin sent.
 */
export function withoutOriginsCopiesOfOwnHeaders(origin: HeaderList, changes: HeaderChanges): HeaderChanges {
  const copies = namesAmong(origin, isSvcCacheHeader);
  return copies.length === 0 ? changes : { set: changes.set, remove: [...changes.remove, ...copies] };
}

/** RFC 9110 section 7.6.1: the names `connection` lists are of fields for this connection only. */
function connectionOptions(headers: HeaderList): ReadonlySet<string> {
  const names = new Set<string>();
  for (const [name, value] of headers) {
    if (name !== 'connection') continue;
    for (const option of value.split(',')) names.add(option.trim().toLowerCase());
  }
  return names;
}

/** Changes to a set of HTTP headers: set (a repeated name appends) and remove. */
export interface HeaderChanges {
  set: Array<[string, string]>;
  remove: string[];
}

/** Every change of each, in order: a header set twice is set, then appended (HeaderChanges). */
export function joinedChanges(...changes: HeaderChanges[]): HeaderChanges {
  return { set: changes.flatMap((change) => change.set), remove: changes.flatMap((change) => change.remove) };
}

/** `svc-cache: <status>` and any other headers to set. */
export function cacheStatusHeader(status: 'HIT' | 'MISS' | 'PASS', extra: Array<[string, string]> = []): HeaderChanges {
  return { set: [[CACHE_STATUS_HEADER, status], ...extra], remove: [] };
}

/** The `svc-debug-*` headers for an explanation, and the pass reason's code when the request passed. */
export function explanationHeaders(explain: Explanation | undefined, passReason?: PassReason): Array<[string, string]> {
  if (!explain) return [];
  const headers: Array<[string, string]> = [];
  if (explain.scope !== undefined) headers.push(['svc-debug-scope', explain.scope]);
  if (explain.bucket !== undefined) headers.push(['svc-debug-bucket', explain.bucket]);
  if (explain.rules !== undefined) headers.push(['svc-debug-rules', explain.rules]);
  if (passReason !== undefined) headers.push(['svc-debug-pass-reason', passReason]);
  // Header values are visible ASCII (docs/ext-proc.md, Header values): a rule description may not be.
  return headers.map(([name, value]) => [name, value.replace(/[^\x20-\x7e]/g, '?')]);
}

/**
 * Origin headers that give a downstream cache a lifetime of their own, whatever `cache-control`
 * says: RFC 9213's targeted fields, any `*-Cache-Control` (`CDN-Cache-Control`,
 * `Cloudflare-CDN-Cache-Control`, `Akamai-Cache-Control`), `Surrogate-Control` (Varnish, Fastly,
 * Akamai), Akamai's `Edge-Control` and nginx's `X-Accel-Expires`. A scoped answer goes out without
 * them: beside them its `private, no-cache` would not keep a CDN from storing one user's answer for
 * the next.
 */
function grantsSharedCaching(name: string): boolean {
  return name.endsWith('-cache-control') || SHARED_CACHE_GRANTS.has(name);
}

const SHARED_CACHE_GRANTS: ReadonlySet<string> = new Set(['surrogate-control', 'edge-control', 'x-accel-expires']);

/** Removes, from a scoped answer on its way to the client, the origin's headers that grant shared caching. */
export function withoutSharedCacheGrants(headers: HeaderList): HeaderChanges {
  return { set: [], remove: namesAmong(headers, grantsSharedCaching) };
}

/** A stored entry's headers as a scoped answer replays them: without what grants shared caching. */
export function scopedEntryHeaders(headers: Array<[string, string]>): Array<[string, string]> {
  return headers.some(([name]) => grantsSharedCaching(name)) ? headers.filter(([name]) => !grantsSharedCaching(name)) : headers;
}

/** Whether a cached answer's scope headers make it private: a custom scope's, not PUBLIC's `vary` alone (scopeAndKey). */
export function scopesTheAnswer(scopeHeaders: Array<[string, string]>): boolean {
  return scopeHeaders.some(([name]) => name === 'cache-control');
}

/** Scope headers for a cached answer, with `vary` extended by the origin's own. */
export function mergeScopeHeaders(origin: HeaderList, scopeHeaders: Array<[string, string]>): Array<[string, string]> {
  if (scopeHeaders.length === 0) return [];
  const originVary = headerValue(origin, 'vary');
  return scopeHeaders.map(([name, value]): [string, string] =>
    name === 'vary' && originVary ? [name, `${originVary}, ${value}`] : [name, value],
  );
}
