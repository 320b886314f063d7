import { headerValue, type HeaderList } from './headers.js';

/**
 * What a request's preconditions make of the 200 a stored answer would give it, as the origin that
 * sent the answer's validators would decide (RFC 9110 section 13.2.2):
 * - `not-modified`: a GET whose `If-None-Match` names the answer's entity tag (weak comparison,
 *   section 8.8.3.2) or `*`, or, without `If-None-Match`, whose `If-Modified-Since` is no earlier
 *   than its `Last-Modified`: the origin answers 304. Browsers send them for a GET whose answer they
 *   kept.
 * - `for-the-origin`: `If-Match` or `If-Unmodified-Since`, which the origin evaluates first and may
 *   answer 412 for, with a body of its own.
 * - `none`: the 200. So for any other method: a POST's matching `If-None-Match` asks for 412, but
 *   origins answer GraphQL POSTs without reading it, as svc-cache does.
 * Linear in the headers' length.
 */
export function preconditionVerdict(method: string, request: HeaderList, response: HeaderList): PreconditionVerdict {
  if (method !== 'GET') return 'none';
  // One pass over a HIT's request headers, which usually hold none of them.
  const ifNoneMatch: string[] = [];
  const ifModifiedSince: string[] = [];
  for (const [name, value] of request) {
    if (!name.startsWith('if-')) continue;
    if (name === 'if-match' || name === 'if-unmodified-since') return 'for-the-origin';
    if (name === 'if-none-match') ifNoneMatch.push(value);
    else if (name === 'if-modified-since') ifModifiedSince.push(value);
  }
  if (ifNoneMatch.length > 0) {
    const etag = headerValue(response, 'etag');
    const matched = ifNoneMatch.some((value) => value.trim() === '*') || (etag !== undefined && namesEntityTag(ifNoneMatch.join(','), etag));
    return matched ? 'not-modified' : 'none';
  }
  // Sent twice, it is no one date, and is ignored (RFC 9110 section 13.1.3).
  const since = ifModifiedSince.length === 1 ? httpDateMs(ifModifiedSince[0]) : undefined;
  if (since === undefined) return 'none';
  const lastModified = httpDateMs(headerValue(response, 'last-modified'));
  return lastModified !== undefined && lastModified <= since ? 'not-modified' : 'none';
}

export type PreconditionVerdict = 'none' | 'not-modified' | 'for-the-origin';

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

/**
 * An HTTP-date in any of its three forms (RFC 9110 section 5.6.7: IMF-fixdate, RFC 850, asctime),
 * in milliseconds; undefined for anything else, which a recipient ignores (`Date.parse` alone
 * would read `2030` as a date).
 */
function httpDateMs(value: string | undefined): number | undefined {
  const date = value?.trim();
  if (date === undefined || !HTTP_DATE.test(date)) return undefined;
  // asctime's form names no zone, and is GMT.
  const ms = Date.parse(date.endsWith(' GMT') ? date : `${date} GMT`);
  return Number.isFinite(ms) ? ms : undefined;
}

const HTTP_DATE =
  /^(?:[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT|[A-Z][a-z]+, \d{2}-[A-Z][a-z]{2}-\d{2} \d{2}:\d{2}:\d{2} GMT|[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4})$/;
