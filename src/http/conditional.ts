import { headerValue, headerValues, type HeaderList } from './headers.js';

/**
 * Whether a GET's preconditions make the 200 it would get a 304 Not Modified, as the origin that
 * sent the stored answer's validators would decide (RFC 9110 section 13.2.2): `If-None-Match`
 * naming the answer's entity tag (weak comparison, section 8.8.3.2), or `*`; without
 * `If-None-Match`, `If-Modified-Since` no earlier than its `Last-Modified`. Browsers send them for a
 * GET whose answer they kept. Other methods are not answered 304 (a POST's matching `If-None-Match`
 * asks for 412): their preconditions are not evaluated, and they get the 200. Linear in the
 * headers' length.
 */
export function isNotModified(method: string, request: HeaderList, response: HeaderList): boolean {
  if (method !== 'GET') return false;
  const ifNoneMatch = headerValues(request, 'if-none-match');
  if (ifNoneMatch.length > 0) {
    const etag = headerValue(response, 'etag');
    return ifNoneMatch.some((value) => value.trim() === '*') || (etag !== undefined && namesEntityTag(ifNoneMatch.join(','), etag));
  }
  const since = headerValue(request, 'if-modified-since');
  const lastModified = headerValue(response, 'last-modified');
  if (since === undefined || lastModified === undefined) return false;
  const sinceMs = Date.parse(since);
  const lastModifiedMs = Date.parse(lastModified);
  return Number.isFinite(sinceMs) && Number.isFinite(lastModifiedMs) && lastModifiedMs <= sinceMs;
}

/** Whether the comma-separated entity tags of `list` hold `etag`'s opaque tag, weak or strong alike. */
function namesEntityTag(list: string, etag: string): boolean {
  const wanted = opaqueTag(etag.trim());
  if (wanted === undefined) return false;
  // An opaque tag is a quoted string that may hold commas: read tag by tag, not split on commas.
  for (let at = 0; at < list.length; ) {
    while (at < list.length && (list[at] === ',' || list[at] === ' ' || list[at] === '\t')) at += 1;
    if (list.startsWith('W/', at)) at += 2;
    if (list[at] !== '"') return false;
    const end = list.indexOf('"', at + 1);
    if (end < 0) return false;
    if (list.slice(at, end + 1) === wanted) return true;
    at = end + 1;
  }
  return false;
}

/** `"xyz"` of `W/"xyz"` or `"xyz"`; undefined for a value that is no entity tag. */
function opaqueTag(etag: string): string | undefined {
  const tag = etag.startsWith('W/') ? etag.slice(2) : etag;
  return tag.length >= 2 && tag.startsWith('"') && tag.endsWith('"') && tag.indexOf('"', 1) === tag.length - 1 ? tag : undefined;
}
