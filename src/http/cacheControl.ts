import { headerValues, varyNames, type HeaderList } from './headers.js';

/**
 * What RFC 9111 lets a shared cache store, and for how long. svc-cache never revalidates, so what
 * would need revalidation before reuse is not stored; where the RFC lets a cache choose, it is
 * conservative (section 4.2.1: invalid or conflicting freshness information means stale).
 */

export type UnstorableReason =
  | 'origin-status'
  | 'origin-no-store'
  | 'origin-private'
  | 'origin-no-cache'
  | 'origin-pragma-no-cache'
  | 'origin-vary-star'
  | 'origin-vary'
  | 'origin-max-age-zero'
  | 'origin-max-age-invalid'
  | 'origin-cache-control-invalid'
  | 'origin-expired';

export type Storability =
  /** `freshSeconds`: the origin's remaining freshness; undefined when the origin gave none (the rule decides). */
  | { storable: true; freshSeconds: number | undefined }
  | { storable: false; reason: Exclude<UnstorableReason, 'origin-vary'> }
  /** `header`: the first request header named by `Vary` whose value is not in the key. */
  | { storable: false; reason: 'origin-vary'; header: string };

export interface StorabilityContext {
  /** Lower-case names of the request headers whose whole value is in the cache key. */
  keyedRequestHeaders: ReadonlySet<string>;
  /** Epoch milliseconds: the answer's apparent age from its `Date`, and `Expires` when it has no valid `Date`. */
  now: number;
}

/** RFC 9111 section 1.2.2: a delta-seconds too large to represent counts as 2^31. */
const MAX_DELTA_SECONDS = 2 ** 31;

/** The directives under which a shared cache must not serve a stale answer (RFC 9111 section 4.2.4). */
const STALE_FORBIDDING = ['must-revalidate', 'proxy-revalidate', 's-maxage'];

export function storability(status: number, headers: HeaderList, context: StorabilityContext): Storability {
  // svc-cache stores only complete GraphQL results, which are 200.
  if (status !== 200) return { storable: false, reason: 'origin-status' };
  const directives = cacheControlDirectives(headers);
  const refused = refusalIn(directives);
  if (refused) return refused;
  // RFC 9111 section 5.4: Pragma is deprecated, but an HTTP/1.0-minded origin that sends only
  // `Pragma: no-cache` means "do not reuse without revalidation"; svc-cache does not revalidate.
  if (directives.size === 0 && hasPragmaNoCache(headers)) return { storable: false, reason: 'origin-pragma-no-cache' };
  const vary = unsatisfiedVary(headers, context.keyedRequestHeaders);
  if (vary === '*') return { storable: false, reason: 'origin-vary-star' };
  if (vary !== undefined) return { storable: false, reason: 'origin-vary', header: vary };
  // A line outside RFC 9111's grammar (`foo="x, no-store`: an unclosed quote; `public; private`;
  // `"private"`) is read differently by other caches, some of which find a `no-store` or `private`
  // where this reading found none (nginx and Varnish match the words alone): not stored, whatever
  // lifetime it gives (also under cache.ignoreOriginCacheControl, which sets lifetimes aside).
  if (!headerValues(headers, 'cache-control').every(wellFormedDirectives)) return { storable: false, reason: 'origin-cache-control-invalid' };
  // RFC 9213's `CDN-Cache-Control` and Surrogate-Control (Edge Architecture 1.0) address caches like
  // svc-cache. They are honoured where they restrict what Cache-Control allows, never where they would
  // allow more: taken in place of Cache-Control, as RFC 9213 lets a cache take them, a line a mistaken
  // origin sends every cache would store a `Cache-Control: private` answer (README, Response headers
  // stored and replayed).
  const targeted = targetedDirectives(headers);
  if (targeted === undefined) return { storable: false, reason: 'origin-cache-control-invalid' };
  for (const family of targeted) {
    const refused = refusalIn(family);
    if (refused) return refused;
  }
  return targeted.reduce((verdict, family) => withTargetedLifetime(verdict, family, headers, context.now), freshness(directives, headers, context.now));
}

/**
 * `no-store`, `private` or `no-cache`. Qualified forms (`private="set-cookie"`, `no-cache="x"`)
 * would let a cache store the rest; svc-cache does not rewrite stored headers, so any form forbids
 * storing.
 */
function refusalIn(directives: Map<string, string | undefined | null>): Storability | undefined {
  if (directives.has('no-store')) return { storable: false, reason: 'origin-no-store' };
  if (directives.has('private')) return { storable: false, reason: 'origin-private' };
  if (directives.has('no-cache')) return { storable: false, reason: 'origin-no-cache' };
  return undefined;
}

/**
 * The directives of the `CDN-Cache-Control` lines, then of the `Surrogate-Control` lines, each
 * family read apart (their lifetimes may differ); undefined when a line is malformed. A
 * Surrogate-Control directive's target (`max-age=30;edge`) is set aside, so it applies here too,
 * and so is the stale part of its `max-age=30+60`.
 */
function targetedDirectives(headers: HeaderList): Array<Map<string, string | undefined | null>> | undefined {
  const families = [headerValues(headers, 'cdn-cache-control'), headerValues(headers, 'surrogate-control').map(withoutSurrogateExtensions)];
  const present = families.filter((lines) => lines.length > 0);
  return present.every((lines) => lines.every(wellFormedDirectives)) ? present.map(directivesOf) : undefined;
}

function withoutSurrogateExtensions(line: string): string {
  return withoutTargets(line).replace(/(max-age\s*=\s*"?[0-9]+)\+[0-9]+/gi, '$1');
}

/** The line without each directive's `;target`, a `;` inside a quoted string left alone. One pass. */
function withoutTargets(line: string): string {
  if (!line.includes(';')) return line;
  const kept: string[] = [];
  let keptFrom = 0;
  let quoted = false;
  let skipping = false;
  for (let index = 0; index < line.length; index++) {
    const character = line[index];
    if (skipping) {
      if (character === ',') {
        skipping = false;
        keptFrom = index;
      }
    } else if (character === '"') {
      quoted = !quoted;
    } else if (quoted && character === '\\') {
      index++;
    } else if (!quoted && character === ';') {
      kept.push(line.slice(keptFrom, index));
      skipping = true;
    }
  }
  if (!skipping) kept.push(line.slice(keptFrom));
  return kept.join('');
}

/** The shorter of the two lifetimes, when the targeted directives give one. */
function withTargetedLifetime(verdict: Storability, targeted: Map<string, string | undefined | null>, headers: HeaderList, now: number): Storability {
  if (!verdict.storable || (!targeted.has('s-maxage') && !targeted.has('max-age'))) return verdict;
  const limit = freshness(targeted, headers, now);
  if (!limit.storable) return limit;
  return { storable: true, freshSeconds: Math.min(verdict.freshSeconds ?? Number.POSITIVE_INFINITY, limit.freshSeconds ?? Number.POSITIVE_INFINITY) };
}


/**
 * Whether a Cache-Control line is a list of `token [ "=" ( token / quoted-string ) ]` (RFC 9111
 * section 5.2, RFC 9110 section 5.6), empty elements allowed; whitespace around `=` is let pass,
 * as the reading above allows it. One pass over the line.
 */
function wellFormedDirectives(line: string): boolean {
  let index = 0;
  const skipWhitespace = (): void => {
    while (line[index] === ' ' || line[index] === '\t') index++;
  };
  const skipToken = (): boolean => {
    const start = index;
    while (index < line.length && TOKEN_CHARACTER.test(line[index]!)) index++;
    return index > start;
  };
  for (;;) {
    skipWhitespace();
    if (index < line.length && line[index] !== ',') {
      if (!skipToken()) return false;
      skipWhitespace();
      if (line[index] === '=') {
        index++;
        skipWhitespace();
        if (line[index] !== '"') {
          if (!skipToken()) return false;
        } else {
          for (index++; index < line.length && line[index] !== '"'; index++) if (line[index] === '\\') index++;
          if (index >= line.length) return false;
          index++;
        }
        skipWhitespace();
      }
    }
    if (index >= line.length) return true;
    if (line[index] !== ',') return false;
    index++;
  }
}

const TOKEN_CHARACTER = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]$/;

/**
 * How long past its freshness the origin lets a shared cache serve its answer stale, per use, in
 * seconds: `undefined` where the origin says nothing (the rules decide), else a bound on the rules'
 * window (README, Request coalescing and stale-while-revalidate; Stale-if-error).
 */
export interface StaleLimits {
  /** RFC 5861 section 3, `stale-while-revalidate`: served while one request refreshes it. */
  whileRevalidate: number | undefined;
  /** RFC 5861 section 4, `stale-if-error`: served in place of an origin that fails. */
  ifError: number | undefined;
}

/**
 * RFC 9111 section 4.2.4: a cache must not serve stale what `must-revalidate`, `proxy-revalidate`
 * or `s-maxage` (which section 5.2.2.10 gives proxy-revalidate's meaning) forbids; svc-cache never
 * revalidates, so such an answer is fresh or not served. Otherwise RFC 5861's windows bound it.
 */
export function staleLimits(headers: HeaderList): StaleLimits {
  // CDN-Cache-Control and Surrogate-Control only restrict here too (storability).
  const families = [cacheControlDirectives(headers), ...(targetedDirectives(headers) ?? [])];
  if (families.some((directives) => STALE_FORBIDDING.some((name) => directives.has(name)))) return { whileRevalidate: 0, ifError: 0 };
  const shortest = (name: string): number | undefined =>
    families.reduce<number | undefined>((bound, directives) => {
      const window = staleWindow(directives, name);
      return window === undefined ? bound : Math.min(bound ?? window, window);
    }, undefined);
  return { whileRevalidate: shortest('stale-while-revalidate'), ifError: shortest('stale-if-error') };
}

/**
 * RFC 9111 section 4.2.3: how old the answer already was when svc-cache got it, which a HIT's own
 * `age` goes on from: the larger of what an upstream cache says (`Age`, 0 when absent or invalid:
 * an invalid one makes an answer with a lifetime of its own unstorable, `freshness`) and what its
 * `Date` shows (the apparent age; 0 for a `Date` ahead of svc-cache's clock). An upstream cache that
 * sends no `Age` (an HTTP/1.0 one, nginx's `proxy_cache`) shows how long it held the answer only by
 * the origin's `Date` it kept. `Date` drops the fraction of its second, so an answer made just now
 * may show up to a second more: the whole seconds it is certainly older are counted, or a fresh
 * answer under `max-age=1` would be stored half the time, and its HIT's `age` be 0 or 1.
 */
export function initialAgeSeconds(headers: HeaderList, now: number): number {
  const age = deltaSeconds(singleValue(headers, 'age')) ?? 0;
  const date = httpDate(singleValue(headers, 'date') ?? '');
  return date === undefined ? age : Math.max(age, Math.floor((now - date) / 1000) - 1);
}

/** An `Age` that is there but not one delta-seconds (a list, lines that disagree): how long the answer was held is unknown. */
export function hasInvalidAge(headers: HeaderList): boolean {
  const age = singleValue(headers, 'age');
  return age !== undefined && deltaSeconds(age) === undefined;
}

/**
 * RFC 9111 section 5.2.1.5: a request's `no-store` forbids a cache to store any response to it. (Its
 * `no-cache` and `max-age=0` are not honoured: any client could send them to reach the origin.)
 */
export function requestForbidsStoring(headers: HeaderList): boolean {
  return cacheControlDirectives(headers).has('no-store');
}

/** RFC 9110 section 7.7: `no-transform` forbids an intermediary to change the content, its coding included. */
export function forbidsTransform(headers: HeaderList): boolean {
  return cacheControlDirectives(headers).has('no-transform');
}

/**
 * Every Cache-Control directive of every `cache-control` line, lower-cased names; the value is
 * unquoted, and `null` when a repeated directive disagrees with itself.
 */
export function cacheControlDirectives(headers: HeaderList): Map<string, string | undefined | null> {
  return directivesOf(headerValues(headers, 'cache-control'));
}

function directivesOf(lines: readonly string[]): Map<string, string | undefined | null> {
  const directives = new Map<string, string | undefined | null>();
  for (const line of lines) {
    for (const [name, value] of readDirectives(line)) {
      const seen = directives.get(name);
      directives.set(name, directives.has(name) && seen !== value ? null : value);
    }
  }
  return directives;
}

function freshness(directives: Map<string, string | undefined | null>, headers: HeaderList, now: number): Storability {
  // RFC 9111 section 4.2.1: s-maxage, then max-age, then Expires minus Date.
  const maxAgeDirective = directives.has('s-maxage') ? 's-maxage' : directives.has('max-age') ? 'max-age' : undefined;
  let lifetime: number;
  if (maxAgeDirective !== undefined) {
    const seconds = deltaSeconds(directives.get(maxAgeDirective));
    if (seconds === undefined) return { storable: false, reason: 'origin-max-age-invalid' };
    if (seconds === 0) return { storable: false, reason: 'origin-max-age-zero' };
    lifetime = seconds;
  } else {
    const expires = singleValue(headers, 'expires');
    if (expires === undefined) return { storable: true, freshSeconds: undefined };
    // Section 5.3: an invalid Expires, `0` above all, means already expired.
    const expiresAt = httpDate(expires ?? '');
    const date = httpDate(singleValue(headers, 'date') ?? '');
    if (expiresAt === undefined) return { storable: false, reason: 'origin-expired' };
    lifetime = Math.floor((expiresAt - (date ?? now)) / 1000);
  }
  // Section 4.2.3: the answer's age, from an upstream cache's Age or its Date, has already used
  // part of the lifetime.
  if (hasInvalidAge(headers)) return { storable: false, reason: 'origin-expired' };
  const remaining = lifetime - initialAgeSeconds(headers, now);
  return remaining > 0 ? { storable: true, freshSeconds: remaining } : { storable: false, reason: 'origin-expired' };
}

/** A window the origin gives; an invalid or self-contradicting one grants nothing (section 4.2.1's caution). */
function staleWindow(directives: Map<string, string | undefined | null>, name: string): number | undefined {
  if (!directives.has(name)) return undefined;
  return deltaSeconds(directives.get(name)) ?? 0;
}

/** RFC 9111 section 1.2.2 delta-seconds (the quoted form accepted, as section 5.2 asks). */
function deltaSeconds(value: string | undefined | null): number | undefined {
  if (value === undefined || value === null || !/^[0-9]+$/.test(value)) return undefined;
  return Math.min(Number(value), MAX_DELTA_SECONDS);
}

/** The value of a header that must occur once; `null` when its lines disagree, undefined when absent. */
function singleValue(headers: HeaderList, name: string): string | null | undefined {
  const values = headerValues(headers, name).map((value) => value.trim());
  if (values.length === 0) return undefined;
  return values.every((value) => value === values[0]) ? values[0] : null;
}

function hasPragmaNoCache(headers: HeaderList): boolean {
  return headerValues(headers, 'pragma').some((line) => readDirectives(line).some(([name]) => name === 'no-cache'));
}

/** `*`, or the first header named by Vary that is not in the key, or undefined when all are. */
function unsatisfiedVary(headers: HeaderList, keyed: ReadonlySet<string>): string | undefined {
  const names = varyNames(headers);
  return names.includes('*') ? '*' : names.find((name) => !keyed.has(name));
}

/**
 * `name[=token|quoted-string]` directives of one comma-separated line (RFC 9111 section 5.2),
 * in one pass: a quoted value may hold commas and backslash escapes. Anything after a value up to
 * the next comma is kept in it, so `max-age=60 x` reads as the invalid value `60 x`.
 */
function readDirectives(line: string): Array<[name: string, value: string | undefined]> {
  const directives: Array<[string, string | undefined]> = [];
  let index = 0;
  while (index < line.length) {
    let end = index;
    while (end < line.length && line[end] !== ',' && line[end] !== '=') end++;
    const name = line.slice(index, end).trim().toLowerCase();
    let value: string | undefined;
    index = end;
    if (line[index] === '=') {
      index++;
      while (line[index] === ' ' || line[index] === '\t') index++;
      if (line[index] === '"') {
        const quoted = readQuoted(line, index);
        value = quoted.value;
        index = quoted.end;
        const rest = skipToComma(line, index);
        if (line.slice(index, rest).trim() !== '') value = `${value}${line.slice(index, rest)}`.trim();
        index = rest;
      } else {
        const rest = skipToComma(line, index);
        value = line.slice(index, rest).trim();
        index = rest;
      }
    }
    if (name !== '') directives.push([name, value]);
    index++;
  }
  return directives;
}

function readQuoted(line: string, start: number): { value: string; end: number } {
  let value = '';
  let index = start + 1;
  while (index < line.length && line[index] !== '"') {
    if (line[index] === '\\' && index + 1 < line.length) index++;
    value += line[index];
    index++;
  }
  return { value, end: index + 1 };
}

function skipToComma(line: string, start: number): number {
  const comma = line.indexOf(',', start);
  return comma < 0 ? line.length : comma;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const IMF_FIXDATE = /^[a-z]{3}, (\d{2}) ([a-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) gmt$/;
const RFC_850 = /^[a-z]{6,9}, (\d{2})-([a-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) gmt$/;
const ASCTIME = /^[a-z]{3} ([a-z]{3}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/;

/**
 * Epoch milliseconds of an HTTP-date (RFC 9110 section 5.6.7: IMF-fixdate, and the obsolete RFC 850
 * and asctime forms recipients must accept), or undefined. Not `Date.parse`: it takes many other
 * forms and reads asctime in the sidecar's local time zone.
 */
export function httpDate(value: string): number | undefined {
  const text = value.trim().toLowerCase();
  let match = IMF_FIXDATE.exec(text);
  if (match) return utc(Number(match[3]), match[2]!, Number(match[1]), match.slice(4, 7));
  match = RFC_850.exec(text);
  if (match) {
    // RFC 9110 section 5.6.7: a two-digit year more than 50 years ahead is in the past century.
    const twoDigits = Number(match[3]);
    const thisYear = new Date().getUTCFullYear();
    let year = 2000 + twoDigits;
    if (year > thisYear + 50) year -= 100;
    return utc(year, match[2]!, Number(match[1]), match.slice(4, 7));
  }
  match = ASCTIME.exec(text);
  if (match) return utc(Number(match[6]), match[1]!, Number(match[2]!.trim()), match.slice(3, 6));
  return undefined;
}

function utc(year: number, monthName: string, day: number, time: string[]): number | undefined {
  const month = MONTHS.indexOf(monthName);
  const [hours, minutes, seconds] = time.map(Number) as [number, number, number];
  if (month < 0 || day < 1 || hours > 23 || minutes > 59 || seconds > 60) return undefined;
  const epoch = Date.UTC(year, month, day, hours, minutes, seconds);
  // Reject 31 February and the like rather than let Date roll them over.
  return new Date(epoch).getUTCDate() === day ? epoch : undefined;
}
