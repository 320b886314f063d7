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
 * The other names under which this request sends a cookie some origin reads as `name`. PHP and Rack
 * before 3.0 decode a cookie's name as a form field (`%6F` is `o`, `+` a space), and PHP then makes
 * spaces and dots in it underscores and reads `name[...]` as an array under `name`: to such an
 * origin `l%6Fcale=de` is the `locale` cookie, and `user.id=7` is `user_id`.
 */
export function cookieNamesReadAs(headers: HeaderList, name: string): string[] {
  const names: string[] = [];
  for (const sent of cookiesOf(headers).keys()) {
    if (sent !== name && SPELT_OTHERWISE.test(sent) && readingsOf(sent).includes(name)) names.push(sent);
  }
  return names;
}

/** What a cookie name may be read as, other than itself. */
function readingsOf(sent: string): string[] {
  const decoded = sent.replace(/\+/g, ' ').replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  const php = decoded.trimStart();
  const bracket = php.indexOf('[');
  const asPhp = (text: string): string => text.replace(/[ .[]/g, '_');
  return [decoded, asPhp(bracket < 0 ? php : php.slice(0, bracket)), asPhp(php)];
}

/** Characters some origin's cookie parser reads as others (readingsOf). */
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
  for (const [key, line] of headers) {
    if (key !== 'cookie') continue;
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
