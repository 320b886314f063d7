import { irregularCookieLine } from './cookieLine.js';

/**
 * HTTP headers as Envoy hands them over: lower-case names, pseudo-headers (`:method`, `:path`,
 * `:status`) included, and a name may repeat (Envoy keeps each occurrence as its own entry).
 */
export type HeaderList = ReadonlyArray<readonly [name: string, value: string]>;

/** All values of a header, in order. */
export function headerValues(headers: HeaderList, name: string): string[] {
  const values: string[] = [];
  for (const [key, value] of headers) if (key === name) values.push(value);
  return values;
}

/**
 * Whether the request sends a header other than `name` that an origin may read as `name`: CGI and
 * the servers modelled on it (WSGI, Rack, PHP, many Perl and Python stacks) turn `-` and `_` alike
 * into `_` (`X-Team` and `X_Team` are both `HTTP_X_TEAM`), and Envoy passes names with underscores
 * on by default (`headers_with_underscores_action: ALLOW`). Names are lower-case here.
 */
export function headerSpeltOtherwise(headers: HeaderList, name: string): boolean {
  const read = cgiName(name);
  const nameHasUnderscore = name.includes('_');
  for (const [sent] of headers) {
    // Only a name with an underscore on one side can differ from `name` and read as it.
    if (sent.length !== name.length || sent === name || !(nameHasUnderscore || sent.includes('_'))) continue;
    if (cgiName(sent) === read) return true;
  }
  return false;
}

/** A header name as CGI-style origins read it: `-` and `_` alike, as `_` (headerSpeltOtherwise). */
export function cgiName(name: string): string {
  return name.replaceAll('-', '_');
}

/** The names a `Vary` field lists across its lines, trimmed and lower-cased, `*` included (RFC 9110 section 12.5.5). */
export function varyNames(headers: HeaderList): string[] {
  return headerValues(headers, 'vary').flatMap((line) =>
    line
      .split(',')
      .map((part) => part.trim().toLowerCase())
      .filter((name) => name !== ''),
  );
}

/** The header's value, repeated occurrences joined with ", " as HTTP field combination allows. */
export function headerValue(headers: HeaderList, name: string): string | undefined {
  // Read several times per request: one pass, and no array for the usual one occurrence.
  let joined: string | undefined;
  for (const [key, value] of headers) if (key === name) joined = joined === undefined ? value : `${joined}, ${value}`;
  return joined;
}

/**
 * Every value of one cookie, in order of occurrence across the `cookie` lines (which may repeat over
 * HTTP/2). A name may repeat: a browser sends each cookie whose Path and Domain match, the more
 * specific path first (RFC 6265 section 5.4), and cookie parsers differ on which one they keep.
 * The lines are read once per header list: a cookie scope asks for its cookie two or three times
 * per request (its value, whether it repeats, whether the request holds credentials no scope reads),
 * and a browser's `cookie` line runs to kilobytes.
 */
export function cookieValues(headers: HeaderList, name: string): readonly string[] {
  return cookiesOf(headers).get(name) ?? NO_VALUES;
}

/**
 * Whether every cookie the request sends is one of `names`; a pair without `=` counts as another
 * cookie, which some parsers read (Go and PHP as a name, others as a value).
 */
export function sendsOnlyCookies(headers: HeaderList, names: ReadonlySet<string>): boolean {
  for (const line of headerValues(headers, 'cookie')) {
    for (const pair of line.split(';')) {
      if (pair.trim() === '') continue;
      const separator = pair.indexOf('=');
      if (separator < 0 || !names.has(pair.slice(0, separator).trim())) return false;
    }
  }
  return true;
}

/**
 * Whether an origin may read this request's `name` cookie otherwise than svc-cache does
 * (cookieValues: pairs split on `;`, names trimmed and matched exactly), so that svc-cache's bucket
 * need not be the one the origin answers for:
 * - a `cookie` line in another form than browsers send (irregularCookieLine), which parsers read as
 *   different pairs;
 * - `name` in another case (ASP.NET matches names ignoring case), or after a `,` inside a value (Rack
 *   before 2.1.4 and 2.2.3 and ASP.NET Core also split pairs there);
 * - PHP before 7.4.31, 8.0.24 and 8.1.11, and Rack before 2.1.4 and 2.2.3, decode names as form
 *   fields (`%6F` is `o`, `+` a space), and PHP reads dots as underscores, `name[...]` as `name` and
 *   a name only up to a NUL: to them `l%6Fcale=de` is the `locale` cookie.
 */
export function cookieReadOtherwise(headers: HeaderList, name: string): boolean {
  const lines = headerValues(headers, 'cookie');
  if (lines.some(irregularCookieLine) || lines.some((line) => mentionedOtherwise(line, name))) return true;
  const lowered = name.toLowerCase();
  for (const sent of cookiesOf(headers).keys()) {
    if (sent !== name && SPELT_OTHERWISE.test(sent) && readingsOf(sent).some((reading) => reading.toLowerCase() === lowered)) return true;
  }
  return false;
}

/**
 * Whether a regular line (irregularCookieLine) holds `name=` in another case where a pair starts, or
 * after a `,` in any case; not as part of a longer name or of a value (`prefs=locale=de&theme=dark`).
 */
function mentionedOtherwise(line: string, name: string): boolean {
  const lowerLine = line.toLowerCase();
  const lowerName = name.toLowerCase();
  for (let at = lowerLine.indexOf(lowerName); at >= 0; at = lowerLine.indexOf(lowerName, at + 1)) {
    const before = at === 0 ? ';' : line[at - 1];
    if (!PAIR_BOUNDARY.includes(before!) || line[at + name.length] !== '=') continue;
    if (before === ',' || !line.startsWith(name, at)) return true;
  }
  return false;
}

/** What comes before a pair on a regular line: `;` and spaces, or `,` for parsers that split there too. */
const PAIR_BOUNDARY = ';, ';

/** What PHP or an older Rack may read a cookie name as, other than itself. */
function readingsOf(sent: string): string[] {
  const decoded = sent.replace(/\+/g, ' ').replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return [decoded, ...phpReadings(sent), ...phpReadings(decoded)];
}

/** PHP's variable name for a cookie name: up to a NUL, leading spaces dropped, `[` opening an array or read as `_`, spaces and dots as `_`. */
function phpReadings(name: string): string[] {
  const variable = name.split('\u0000', 1)[0]!.trimStart();
  const bracket = variable.indexOf('[');
  const underscored = (text: string): string => text.replace(/[ .[]/g, '_');
  return [underscored(bracket < 0 ? variable : variable.slice(0, bracket)), underscored(variable)];
}

/** Characters some origin's cookie parser reads as others (readingsOf); a NUL comes only escaped (Envoy refuses a raw one). */
const SPELT_OTHERWISE = /[%+. [\]]/;

function cookiesOf(headers: HeaderList): ReadonlyMap<string, readonly string[]> {
  let cookies = cookiesByHeaders.get(headers);
  if (cookies === undefined) {
    cookies = readCookies(headers);
    cookiesByHeaders.set(headers, cookies);
  }
  return cookies;
}

const cookiesByHeaders = new WeakMap<HeaderList, ReadonlyMap<string, readonly string[]>>();
const NO_VALUES: readonly string[] = Object.freeze([]);

function readCookies(headers: HeaderList): Map<string, string[]> {
  const cookies = new Map<string, string[]>();
  for (const line of headerValues(headers, 'cookie')) {
    for (const pair of line.split(';')) {
      const separator = pair.indexOf('=');
      if (separator < 0) continue;
      const name = pair.slice(0, separator).trim();
      const value = pair.slice(separator + 1).trim();
      const values = cookies.get(name);
      if (values === undefined) cookies.set(name, [value]);
      else values.push(value);
    }
  }
  return cookies;
}

/** The media type of a content-type value, lower-cased and without parameters. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
}
