import { CACHE_STATUS_HEADER, type HeaderList } from '../http/index.js';
import type { CachedResponse } from '../store/index.js';
import type { HeaderChanges } from './responses.js';

/**
 * Envoy's default limits on a header map (`max_headers_count`, `max_request_headers_kb` and
 * `max_response_headers_kb`), which deploy/envoy keeps. A header mutation that leaves the map over
 * either makes Envoy answer 500 in place of the origin's answer (docs/ext-proc.md, Header mutations).
 */
export const ENVOY_MAX_HEADER_COUNT = 100;
export const ENVOY_MAX_HEADER_BYTES = 60 * 1024;

export interface FittedChanges {
  changes: HeaderChanges;
  /** False when even without svc-cache's own headers the map ends over Envoy's limits. */
  fits: boolean;
}

/**
 * The changes to the origin's answer headers, less svc-cache's informational headers (`svc-cache`,
 * `svc-debug-*`) when the answer leaves no room for them under Envoy's limits: the client gets the
 * origin's answer without them rather than Envoy's 500 (README, Bad input). A replaced body also
 * sets `content-length` (docs/ext-proc.md, Body rewrites and content-length), counted here.
 */
export function fitToEnvoyLimits(current: HeaderList, changes: HeaderChanges, replacedBody?: Buffer): FittedChanges {
  const sent = (set: HeaderChanges['set']): HeaderList =>
    replacedBody === undefined ? set : [...set, ['content-length', String(replacedBody.length)]];
  if (fits(current, changes.remove, sent(changes.set))) return { changes, fits: true };
  const withoutOwn = { set: changes.set.filter(([name]) => !isInformational(name)), remove: changes.remove };
  return { changes: withoutOwn, fits: fits(current, changes.remove, sent(withoutOwn.set)) };
}

/**
 * Whether svc-cache's changes to a request's headers (and the `content-length` of a replaced body)
 * leave them within Envoy's limits. The map Envoy holds may be over them already: its codec checks
 * the client's headers before the connection manager adds its own (`x-forwarded-for`,
 * `x-request-id`, ...), and any mutation that leaves the map over them is answered 500 (docs/ext-proc.md,
 * Header mutations). Removals of names the request lacks are left out first: they change nothing.
 */
export function fittedRequestChanges(current: HeaderList, changes: HeaderChanges, replacedBody?: Buffer): HeaderChanges | undefined {
  const present = changes.remove.filter((name) => current.some(([key]) => key === name));
  const fitted = present.length === changes.remove.length ? changes : { set: changes.set, remove: present };
  const set: HeaderList = replacedBody === undefined ? fitted.set : [...fitted.set, ['content-length', String(replacedBody.length)]];
  const changesNothing = set.length === 0 && fitted.remove.length === 0;
  return changesNothing || fits(current, fitted.remove, set) ? fitted : undefined;
}

/**
 * Whether a HIT of this entry fits Envoy's header limits. A HIT is an immediate response carrying
 * the stored headers, the scope's (`scopeHeaders`) and those svc-cache adds (HIT_ADDED_HEADERS,
 * two more for a compressed entry); over the limits Envoy refuses the whole header mutation and
 * sends the body with none of them (docs/ext-proc.md, Header mutations): a compressed body without
 * `content-encoding`, a scoped one without `cache-control: private`. The MISS itself leaves out
 * svc-cache's own headers to fit.
 */
export function hitFitsEnvoyLimits(entry: Pick<CachedResponse, 'headers' | 'encoding' | 'contentType'>, scopeHeaders: HeaderList): boolean {
  const added = HIT_ADDED_HEADERS + (entry.encoding === 'identity' ? 0 : CODING_HEADERS);
  const bytes = byteSize(entry.headers) + byteSize(scopeHeaders) + entry.contentType.length + HIT_ADDED_BYTES;
  return entry.headers.length + scopeHeaders.length + added <= ENVOY_MAX_HEADER_COUNT && bytes <= ENVOY_MAX_HEADER_BYTES;
}

/**
 * What every HIT may add besides the scope's headers: `:status`, `content-type`, `svc-cache`, `age`
 * (hitResponse) and `svc-cache-stale` (a stale entry answering for a failing origin); their values
 * but the content type take well under 1 KiB. A compressed entry adds `content-encoding` and `vary`
 * (CODING_HEADERS). A `svc-debug` HIT's explanation is left out where it would not fit (immediateFits).
 */
const HIT_ADDED_HEADERS = 5;
const CODING_HEADERS = 2;
const HIT_ADDED_BYTES = 1024;

/** Whether an immediate response with these headers (and its `:status`) is within Envoy's limits. */
export function immediateFits(headers: HeaderList): boolean {
  return headers.length + 1 <= ENVOY_MAX_HEADER_COUNT && byteSize(headers) + ':status'.length + 3 <= ENVOY_MAX_HEADER_BYTES;
}

function isInformational(name: string): boolean {
  return name === CACHE_STATUS_HEADER || name.startsWith('svc-debug-');
}

/** Applies the changes as Envoy does (removals, then sets: a name's first set replaces, later ones append) to sizes alone. */
function fits(current: HeaderList, remove: readonly string[], set: HeaderList): boolean {
  // Removing and replacing only shrink the map: adding everything is an upper bound, and the usual answer is far under it.
  if (current.length + set.length <= ENVOY_MAX_HEADER_COUNT && byteSize(current) + byteSize(set) <= ENVOY_MAX_HEADER_BYTES) return true;
  const sizes = new Map<string, { count: number; bytes: number }>();
  let count = 0;
  let bytes = 0;
  for (const [name, value] of current) {
    const size = sizes.get(name) ?? { count: 0, bytes: 0 };
    size.count += 1;
    size.bytes += name.length + value.length;
    sizes.set(name, size);
    count += 1;
    bytes += name.length + value.length;
  }
  const drop = (name: string): void => {
    const size = sizes.get(name);
    if (size === undefined) return;
    count -= size.count;
    bytes -= size.bytes;
    sizes.delete(name);
  };
  for (const name of remove) drop(name);
  const replaced = new Set<string>();
  for (const [name, value] of set) {
    if (!replaced.has(name)) {
      drop(name);
      replaced.add(name);
    }
    count += 1;
    bytes += name.length + value.length;
  }
  return count <= ENVOY_MAX_HEADER_COUNT && bytes <= ENVOY_MAX_HEADER_BYTES;
}

function byteSize(headers: HeaderList): number {
  let bytes = 0;
  for (const [name, value] of headers) bytes += name.length + value.length;
  return bytes;
}
