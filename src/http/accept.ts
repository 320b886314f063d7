import { parse as parseContentType } from 'content-type';
import { LRUCache } from 'lru-cache';
import Negotiator from 'negotiator';

/**
 * `Accept` read as media ranges (RFC 9110 section 12.5.1) by `negotiator`: q-values, the most
 * specific range deciding, quoted parameters. Never substring tests: `text/event-stream;q=0` or a
 * range merely listed beside JSON must not change what svc-cache does (issue 12).
 */

/** The two response media types of the GraphQL over HTTP spec. */
export type GraphQLResponseMediaType = 'application/graphql-response+json' | 'application/json';

const GRAPHQL_RESPONSE_JSON = 'application/graphql-response+json';
const JSON_TYPE = 'application/json';

/** The type and coding a HIT is answered in. */
export interface HitNegotiation {
  contentType: string;
  encoding: string;
}

/**
 * The content type (`hitContentType`) and coding (`acceptedEncoding`) a HIT of an entry stored as
 * `storedType` in `storedEncoding` is answered in, or undefined when the client accepts neither
 * GraphQL JSON type, prefers another type to both (`prefersAnotherType`), or accepts neither the
 * stored coding nor identity. Clients send few distinct
 * `Accept`/`Accept-Encoding` pairs and reading them was about 4% of a HIT's CPU, so answers are
 * remembered (see `remembered`).
 */
export function hitNegotiation(
  accept: string | undefined,
  acceptEncoding: string | undefined,
  storedType: string,
  storedEncoding: string,
): HitNegotiation | undefined {
  // The separators cannot occur in header values, so different inputs never share a key.
  const key = `${accept ?? '\n'}\r${acceptEncoding ?? '\n'}\r${storedType}\r${storedEncoding}`;
  return remembered(negotiations, key, () => negotiate(accept, acceptEncoding, storedType, storedEncoding));
}

/**
 * The client accepts no JSON answer at all (only `text/event-stream`, `multipart/mixed`, ...): the
 * request streams. Listing a streaming type beside a JSON one does not make a request streaming.
 * Asked of every request, so remembered per `Accept` as hitNegotiation is.
 */
export function acceptsNoJson(accept: string | undefined): boolean {
  return remembered(jsonRefusals, accept ?? '\n', () => acceptableTypes(accept, [JSON_TYPE, GRAPHQL_RESPONSE_JSON]).length === 0);
}

/**
 * The client names a streaming type (`text/event-stream`, `multipart/mixed`) with q > 0. An origin
 * whose answer varies on `Accept` may then stream it: clients opt into GraphQL over SSE and
 * incremental delivery by naming the type, while `*\/*` or no `Accept` gets JSON (README, HIT, MISS,
 * PASS). Remembered per `Accept` as hitNegotiation is.
 */
export function namesStreamingType(accept: string | undefined): boolean {
  return remembered(streamingNamers, accept ?? '\n', () =>
    new Negotiator({ headers: { accept } }).mediaTypes().some((range) => STREAMING_TYPES.has(range.toLowerCase())),
  );
}

const STREAMING_TYPES = new Set(['text/event-stream', 'multipart/mixed']);

/**
 * Whether an origin with an IDE or landing page may answer a GET with this `Accept` in HTML:
 * GraphQL Yoga shows GraphiQL when `text/html` is anywhere in it, in any case, at any q (a
 * substring test, which no reading of the ranges is as strict as), and Apollo Server 4 its landing
 * page when `negotiator` picks `text/html` among the types it serves (`text/*` first does). Apollo
 * Server 4 reads with negotiator 0.6, svc-cache with 1.1, whose parsers differ on odd ranges
 * (`text/*;q=0.9;ext=1`), so any `text/*` counts, as `text/html` does. The reading is remembered
 * per `Accept`, as hitNegotiation is.
 */
export function mayAnswerWithHtml(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  if (/text\/(?:html|\*)/i.test(accept)) return true;
  return remembered(htmlPreferrers, accept, () => new Negotiator({ headers: { accept } }).mediaType(APOLLO_SERVER_TYPES) === 'text/html');
}

/** The types Apollo Server 4 picks among for a GET (its `prefersHtml`), in its order. */
const APOLLO_SERVER_TYPES = [
  'application/json; charset=utf-8',
  'application/graphql-response+json; charset=utf-8',
  'multipart/mixed; deferSpec=20220824',
  'multipart/mixed',
  'text/html',
];

/**
 * `compute()`, remembered under `key` for the last REMEMBERED_ANSWERS keys of at most
 * MAX_REMEMBERED_KEY_CHARS characters, which bounds each memo at about 1 MB whatever clients send.
 */
function remembered<T>(memo: LRUCache<string, { answer: T }>, key: string, compute: () => T): T {
  if (key.length > MAX_REMEMBERED_KEY_CHARS) return compute();
  const known = memo.get(key);
  if (known !== undefined) return known.answer;
  const answer = compute();
  memo.set(key, { answer });
  return answer;
}

const REMEMBERED_ANSWERS = 1024;
const MAX_REMEMBERED_KEY_CHARS = 512;
const negotiations = new LRUCache<string, { answer: HitNegotiation | undefined }>({ max: REMEMBERED_ANSWERS });
const jsonRefusals = new LRUCache<string, { answer: boolean }>({ max: REMEMBERED_ANSWERS });
const streamingNamers = new LRUCache<string, { answer: boolean }>({ max: REMEMBERED_ANSWERS });
const htmlPreferrers = new LRUCache<string, { answer: boolean }>({ max: REMEMBERED_ANSWERS });

function negotiate(accept: string | undefined, acceptEncoding: string | undefined, storedType: string, storedEncoding: string): HitNegotiation | undefined {
  if (prefersAnotherType(accept)) return undefined;
  const contentType = hitContentType(accept, storedType);
  if (contentType === undefined) return undefined;
  const encoding = acceptedEncoding(acceptEncoding, storedEncoding);
  return encoding === undefined ? undefined : { contentType, encoding };
}

/**
 * The client gives a range that is no GraphQL JSON type and no wildcard (`text/html` in a browser's
 * `Accept`) a q-value strictly higher than either GraphQL JSON type gets: the origin may answer it
 * in that type (GraphQL Yoga and other servers with GraphiQL send its HTML page to a browser), so
 * the stored JSON is not what it would send (README, HIT, MISS, PASS). A type listed beside JSON at
 * the same q (`application/json, text/plain, *\/*`, axios's default) leaves JSON the origin's choice.
 */
function prefersAnotherType(accept: string | undefined): boolean {
  if (isAbsent(accept)) return false;
  const ranges = mediaRanges(accept);
  const servable = Math.max(qualityOf(ranges, JSON_TYPE, { exact: false }), qualityOf(ranges, GRAPHQL_RESPONSE_JSON, { exact: false }));
  return ranges.some(({ type, q }) => q > servable && !type.endsWith('/*') && type !== JSON_TYPE && type !== GRAPHQL_RESPONSE_JSON);
}

/**
 * The type a HIT is answered in: of the two GraphQL JSON types (a cacheable answer's body is the same
 * under both), the one the GraphQL over HTTP spec has a server prefer for this `Accept` when the
 * client accepts it (`application/json` for `*\/*` or no `Accept`, as the origin answers them), else
 * the other; undefined when the client accepts neither or the stored type is no GraphQL JSON type.
 */
function hitContentType(accept: string | undefined, stored: string): string | undefined {
  const separator = stored.indexOf(';');
  const preferred = `${ownAnswerMediaType(accept)}${separator < 0 ? '' : stored.slice(separator)}`;
  return acceptedGraphQLResponseType(accept, stored) && acceptedGraphQLResponseType(accept, preferred);
}

/**
 * The `content-type` a HIT is answered with, or undefined when the client accepts neither GraphQL
 * JSON type (then the request goes to the origin, which negotiates). A cacheable answer (200,
 * `data`, no `errors`) has the same body under both types, so the stored type is used when
 * accepted, else the other one, keeping the stored parameters (`charset`). A stored type that is
 * not a GraphQL JSON type is never relabelled.
 */
export function acceptedGraphQLResponseType(accept: string | undefined, stored: string): string | undefined {
  const separator = stored.indexOf(';');
  const storedType = (separator < 0 ? stored : stored.slice(0, separator)).trim().toLowerCase();
  const parameters = separator < 0 ? '' : stored.slice(separator);
  if (storedType !== JSON_TYPE && storedType !== GRAPHQL_RESPONSE_JSON) return undefined;
  const acceptable = acceptableTypes(accept, [JSON_TYPE, GRAPHQL_RESPONSE_JSON]);
  if (acceptable.includes(storedType)) return stored;
  const other = storedType === JSON_TYPE ? GRAPHQL_RESPONSE_JSON : JSON_TYPE;
  return acceptable.includes(other) ? `${other}${parameters}` : undefined;
}

/**
 * The content coding a HIT is answered in, per `Accept-Encoding` (RFC 9110 section 12.5.3, read by
 * `negotiator`): the stored coding whenever the client accepts it at all (q > 0; serving it costs
 * nothing), else `identity` when the client accepts that, else undefined. No `Accept-Encoding`
 * means identity only: a client that names no coding may not be able to decode one.
 */
export function acceptedEncoding(acceptEncoding: string | undefined, stored: string): string | undefined {
  if (stored === 'identity') return stored;
  const acceptable = new Negotiator({ headers: { 'accept-encoding': acceptEncoding } }).encodings([stored, 'identity']);
  if (acceptable.includes(stored)) return stored;
  return acceptable.includes('identity') ? 'identity' : undefined;
}

/**
 * The media type of svc-cache's own answers (errors, 405, purge results), and the one a HIT is
 * labelled with when the client accepts it, as Apollo Server 4 negotiates it (through `negotiator`,
 * as here): of the two GraphQL JSON types, the one the client gives the higher q-value, through the
 * most specific range covering it (`*\/*;q=0.5, application/json;q=0.1` prefers
 * `application/graphql-response+json`); on a tie the one its `Accept` lists first, as GraphQL Yoga
 * and graphql-http answer too (they read no q-values), and `application/json` when neither is listed
 * apart (`*\/*`). `application/json` also when `Accept` is absent (the spec's legacy-client default) or
 * accepts neither (the spec lets the server choose rather than answer 406).
 */
export function ownAnswerMediaType(accept: string | undefined): GraphQLResponseMediaType {
  return (acceptableTypes(accept, [JSON_TYPE, GRAPHQL_RESPONSE_JSON])[0] as GraphQLResponseMediaType | undefined) ?? JSON_TYPE;
}

/**
 * The offered types the client accepts (q > 0), in the client's order of preference; none when a
 * range covering one of them has a parameter origins read otherwise than `negotiator`
 * (`MediaRange.readOtherwise`: `application/json;charset=*`, which graphql-http answers 406 and
 * Yoga streams; `charset="utf-8"`): such a request goes to the origin.
 */
function acceptableTypes(accept: string | undefined, offered: readonly string[]): string[] {
  if (isAbsent(accept)) return [...offered];
  const readOtherwise = mediaRanges(accept).some((range) => range.readOtherwise && offered.some((type) => specificityFor(range.type, type) >= 0));
  if (readOtherwise) return [];
  // Offered as svc-cache and Apollo Server 4 send them, so that a range naming `charset=utf-8`
  // (`application/json; charset=utf-8`, which origins answer with JSON) accepts them.
  const withCharset = offered.map((type) => `${type}; charset=utf-8`);
  return new Negotiator({ headers: { accept } }).mediaTypes(withCharset).map((type) => offered[withCharset.indexOf(type)]!);
}

/**
 * The q-value of the range that decides for `type` (RFC 9110 section 12.5.1: the most specific
 * range applies): 0 when none covers it, and 0 when only a wildcard does if `exact`.
 */
function qualityOf(ranges: ReadonlyArray<MediaRange>, type: string, { exact }: { exact: boolean }): number {
  let quality = 0;
  let decidingSpecificity = -1;
  for (const range of ranges) {
    const specificity = specificityFor(range.type, type);
    if (specificity < 0 || (exact && specificity < EXACT) || specificity < decidingSpecificity) continue;
    quality = specificity > decidingSpecificity ? range.q : Math.max(quality, range.q);
    decidingSpecificity = specificity;
  }
  return quality;
}

const EXACT = 2;

/** 2 for the type itself, 1 for `type/*`, 0 for `*\/*`, -1 when the range does not cover it. */
function specificityFor(range: string, type: string): number {
  if (range === type) return EXACT;
  if (range === '*/*') return 0;
  return range.endsWith('/*') && type.startsWith(range.slice(0, -1)) ? 1 : -1;
}

/**
 * Each media range with its q-value, read by `content-type` (quoted parameters may hold commas).
 * A malformed range or q-value counts as q=0: what the client meant is unknown.
 */
function mediaRanges(accept: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  let index = 0;
  while (index < accept.length) {
    while (accept[index] === ' ' || accept[index] === '\t' || accept[index] === ',') index++;
    if (index >= accept.length) break;
    try {
      const parsed = parseContentType(accept, { comma: true, start: index });
      const wildcardParameter = Object.entries(parsed.parameters).some(([name, value]) => name !== 'q' && value === '*');
      const charsetSpeltOtherwise = parsed.parameters['charset'] !== undefined && !charsetsAreLiteralUtf8(accept.slice(index, parsed.index));
      ranges.push({ type: parsed.type, q: qValue(parsed.parameters['q']), readOtherwise: wildcardParameter || charsetSpeltOtherwise });
      index = parsed.index + 1;
    } catch {
      const next = accept.indexOf(',', index);
      index = next < 0 ? accept.length : next + 1;
    }
  }
  return ranges;
}

interface MediaRange {
  /** Lower-cased, without parameters. */
  type: string;
  q: number;
  /**
   * A parameter origins read otherwise than `negotiator` does (acceptableTypes): one other than `q`
   * valued `*`, or a charset not written `charset=utf-8` (in any case, unquoted): `negotiator`
   * unquotes `charset="utf-8"`, which GraphQL Yoga and graphql-http compare as text and answer 406.
   */
  readOtherwise: boolean;
}

/** Whether every `charset` parameter of one range's text is written `charset=utf-8` (in any case, unquoted). */
function charsetsAreLiteralUtf8(range: string): boolean {
  return range
    .split(';')
    .slice(1)
    .every((parameter) => !/^[ \t]*charset[ \t]*=/i.test(parameter) || /^[ \t]*charset=utf-8[ \t]*$/i.test(parameter));
}

function qValue(raw: string | undefined): number {
  if (raw === undefined) return 1;
  return /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(raw) ? Number(raw) : 0;
}

function isAbsent(accept: string | undefined): accept is undefined {
  return accept === undefined || accept.trim() === '';
}
