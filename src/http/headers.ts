import { simpleCookieReading } from './simpleCookie.js';

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
 * Whether an origin may read this request's `name` cookie otherwise than svc-cache does
 * (cookieValues: pairs split on `;`, names trimmed and matched exactly), so that svc-cache's bucket
 * need not be the one the origin answers for:
 * - ASP.NET matches names ignoring case; Rack before 2.1.4 and 2.2.3 and ASP.NET Core also split
 *   pairs on `,`, and Python's SimpleCookie and ASP.NET Core on whitespace; Rack keeps a tab before a
 *   name, and PHP and Rack a space before `=`, in the name. So `name` may appear only as a plain pair:
 *   at a line's start or after `;` and spaces, in its own case, `=` right after it, and its value
 *   may have no whitespace but spaces and tabs around it.
 * - PHP before 7.4.31, 8.0.24 and 8.1.11, and Rack before 2.1.4 and 2.2.3, decode names as form
 *   fields (`%6F` is `o`, `+` a space), and PHP reads spaces and dots as underscores, `name[...]` as
 *   `name` and a name only up to a NUL: to them `l%6Fcale=de` is the `locale` cookie.
 * - Python's SimpleCookie stops at the first pair it cannot read and reads nothing from a line
 *   with a name but no value (simpleCookieReading): to it `a=x"y; locale=de` holds no `locale`.
 */
export function cookieReadOtherwise(headers: HeaderList, name: string): boolean {
  if (headerValues(headers, 'cookie').some((line) => mentionedOtherwise(line, name))) return true;
  if (readBySimpleCookieOtherwise(headers, name)) return true;
  const lowered = name.toLowerCase();
  for (const sent of cookiesOf(headers).keys()) {
    if (sent !== name && SPELT_OTHERWISE.test(sent) && readingsOf(sent).some((reading) => reading.toLowerCase() === lowered)) return true;
  }
  return false;
}

/** Whether `line` names the cookie `name`, in any case and followed by `=`, anywhere but as a plain pair. */
function mentionedOtherwise(line: string, name: string): boolean {
  const lowerLine = line.toLowerCase();
  const lowerName = name.toLowerCase();
  for (let at = lowerLine.indexOf(lowerName); at >= 0; at = lowerLine.indexOf(lowerName, at + 1)) {
    // Only where some parser starts a pair: after another name's characters it is part of that
    // name, and after `=`, `?` or `&` part of a value (`prefs=locale=de&theme=dark`).
    if (at > 0 && !PAIR_BOUNDARY.test(line[at - 1]!)) continue;
    let equals = at + name.length;
    while (equals < line.length && /\s/.test(line[equals]!)) equals += 1;
    if (line[equals] !== '=') continue;
    if (equals !== at + name.length || !line.startsWith(name, at) || !startsPair(line, at)) return true;
    if (trimmedOtherwise(line, equals + 1)) return true;
  }
  return false;
}

/**
 * Whether the value from `start` to the next `;` begins or ends with whitespace: svc-cache trims it
 * away, as Python does, while Rack keeps spaces and tabs (`locale=de ;` is `de ` to it) and Node's
 * `cookie` and Go other whitespace (a no-break space), so the origin may read another value than
 * the key holds. Browsers send none (RFC 6265 section 4.2.1).
 */
function trimmedOtherwise(line: string, start: number): boolean {
  const end = line.indexOf(';', start);
  const value = line.slice(start, end < 0 ? line.length : end);
  return value.trim() !== value;
}

/** Whether `at` is where a pair starts: the line's start, or after `;` and spaces. */
function startsPair(line: string, at: number): boolean {
  let before = at - 1;
  while (before >= 0 && line[before] === ' ') before -= 1;
  return before < 0 || line[before] === ';';
}

/** Where a cookie parser may start a pair: after `;`, `,` (older Rack, ASP.NET Core) or whitespace (SimpleCookie, ASP.NET Core). */
const PAIR_BOUNDARY = /[;,\s]/;

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

/**
 * Whether SimpleCookie reads `name` as none of the values svc-cache reads, or reads it where
 * svc-cache reads none. The lines are read as one joined with `; `, as Envoy joins them for an
 * HTTP/1.1 origin; once per header list, like cookiesOf.
 */
function readBySimpleCookieOtherwise(headers: HeaderList, name: string): boolean {
  let reading = simpleCookieReadings.get(headers);
  if (reading === undefined) {
    reading = simpleCookieReading(headerValues(headers, 'cookie').join('; ')) ?? NO_READING;
    simpleCookieReadings.set(headers, reading);
  }
  const pythonValue = reading.get(name);
  const values = cookiesOf(headers).get(name);
  return pythonValue === undefined ? values !== undefined : values === undefined || !values.includes(pythonValue);
}

const simpleCookieReadings = new WeakMap<HeaderList, ReadonlyMap<string, string>>();
const NO_READING: ReadonlyMap<string, string> = new Map();
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
