/**
 * Whether a `cookie` line departs from the form browsers send (RFC 6265 section 4.2.1): pairs
 * joined by `;` and spaces, each a name (an RFC 9110 token), `=`, and a value that is a run of
 * printable ASCII other than `"`, `;` and `\`, or such a run in double quotes; and no name that
 * Python's SimpleCookie reads as an attribute. Origins' cookie parsers read such a line as the same
 * pairs; they part ways on every other form, often over pairs far from the one a scope reads:
 * - whitespace in or around a pair: SimpleCookie and ASP.NET Core split pairs there, Rack keeps it
 *   in names and values, PHP in names;
 * - `"` or `\` outside a quoted value: SimpleCookie stops reading (`a=x"y; locale=de` holds no
 *   `locale` for it), ASP.NET Core skips a character and reads on (`a=x"locale=de` is its
 *   `locale`), Werkzeug's quoted value runs past `;`, Tomcat's RFC 2109 mode reads escapes;
 * - a name without `=`: Go, PHP, Rack and Tomcat read an empty cookie of that name, SimpleCookie
 *   no cookie at all;
 * - other characters: Python's `str.strip` removes U+0085 and U+001C to U+001F around a name,
 *   SimpleCookie stops at non-ASCII;
 * - an attribute name (`path`, `expires`, `$Version`): SimpleCookie reads it as the previous
 *   cookie's attribute, and a line starting with one as no cookies.
 * Linear in the line, with no allocation but for a name short enough to be an attribute's.
 */
export function irregularCookieLine(line: string): boolean {
  if (line === '') return false;
  for (let at = 0; ; ) {
    const nameEnd = runEnd(line, at, TOKEN);
    if (nameEnd === at || line[nameEnd] !== '=' || isAttributeName(line, at, nameEnd)) return true;
    const valueEnd = quotedOrPlainValueEnd(line, nameEnd + 1);
    if (valueEnd === undefined) return true;
    if (valueEnd === line.length) return false;
    if (line[valueEnd] !== ';') return true;
    at = runEnd(line, valueEnd + 1, SPACE);
  }
}

/** Where the value from `start` ends, quotes included; undefined for an unclosed quote. */
function quotedOrPlainValueEnd(line: string, start: number): number | undefined {
  if (line[start] !== '"') return runEnd(line, start, VALUE);
  const end = runEnd(line, start + 1, VALUE);
  return line[end] === '"' ? end + 1 : undefined;
}

/**
 * Whether Python's SimpleCookie reads a cookie of this name as an attribute of the one before it:
 * `Morsel._reserved` (Python 3.14's `partitioned` included) in any case, and RFC 2965's `$` names.
 */
export function isCookieAttributeName(name: string): boolean {
  return name.startsWith('$') || (name.length <= LONGEST_ATTRIBUTE && ATTRIBUTES.has(name.toLowerCase()));
}

function isAttributeName(line: string, start: number, end: number): boolean {
  return line[start] === '$' || (end - start <= LONGEST_ATTRIBUTE && isCookieAttributeName(line.slice(start, end)));
}

const ATTRIBUTES = new Set(['expires', 'path', 'comment', 'domain', 'max-age', 'secure', 'httponly', 'version', 'samesite', 'partitioned']);
const LONGEST_ATTRIBUTE = Math.max(...[...ATTRIBUTES].map((name) => name.length));

function runEnd(line: string, at: number, characters: Uint8Array): number {
  let end = at;
  while (end < line.length && characters[line.charCodeAt(end)] === 1) end += 1;
  return end;
}

/** A table of 128 entries: every character past ASCII reads as none of these. */
function asciiClass(includes: (code: number) => boolean): Uint8Array {
  const table = new Uint8Array(128);
  for (let code = 0; code < 128; code += 1) table[code] = includes(code) ? 1 : 0;
  return table;
}

const TOKEN_PUNCTUATION = "!#$%&'*+-.^_`|~";
/** RFC 9110 section 5.6.2 `tchar`. */
const TOKEN = asciiClass((code) => /[0-9A-Za-z]/.test(String.fromCharCode(code)) || TOKEN_PUNCTUATION.includes(String.fromCharCode(code)));
/** Printable ASCII but `"`, `;` and `\`: RFC 6265's cookie-octet and the `,` browsers also send. */
const VALUE = asciiClass((code) => code >= 0x21 && code <= 0x7e && code !== 0x22 && code !== 0x3b && code !== 0x5c);
const SPACE = asciiClass((code) => code === 0x20);
