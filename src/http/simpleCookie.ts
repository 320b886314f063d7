/**
 * The cookies Python's `http.cookies.SimpleCookie` reads from a `Cookie` header (the parser of
 * Bottle, CherryPy and aiohttp before 3.12), by name, each with its value as sent (quotes
 * included; the last of a repeated name), or `undefined` when it reads none at all: it rejects the
 * whole text for a name without a value (`flag;`) or an attribute name before any cookie
 * (`path=/; a=1`), and raises for a name it matched but will not set (`a/b=1`), so what the origin
 * reads then depends on how it handles the error.
 *
 * SimpleCookie matches one pair after another with a regular expression and stops at the first
 * text that does not match (`a=x"y; locale=de` holds no cookie at all for it): a value may hold
 * no whitespace, `"`, `\` or non-ASCII character unless it is a quoted string. Here the same
 * expression's outcome is worked out without backtracking, since its own backtracking is quadratic
 * in a pair's length and a `cookie` line runs to 60 KiB.
 */
export function simpleCookieReading(text: string): ReadonlyMap<string, string> | undefined {
  const cookies = new Map<string, string>();
  let cookieSeen = false;
  for (let at = 0; at < text.length; ) {
    const pair = pairAt(text, at);
    if (pair === undefined) break;
    at = pair.end;
    const { key, value } = pair;
    // Attribute names are short: most cookie names need no lower-casing.
    const lowered = key.length <= LONGEST_ATTRIBUTE + 1 ? key.toLowerCase() : '';
    if (key.startsWith('$')) {
      // RFC 2965's attribute syntax: ignored before any cookie, and after one it raises unless it names an attribute.
      if (cookieSeen && !ATTRIBUTES.has(lowered.slice(1))) return undefined;
      continue;
    }
    if (lowered === 'partitioned') return undefined; // an attribute from Python 3.14 on, a cookie before it
    if (ATTRIBUTES.has(lowered)) {
      if (!cookieSeen || (value === undefined && !FLAGS.has(lowered))) return undefined;
      continue;
    }
    if (value === undefined || !LEGAL_NAME.test(key)) return undefined;
    cookies.set(key, value);
    cookieSeen = true;
  }
  return cookies;
}

/** `Morsel._reserved`: names SimpleCookie reads as attributes of the cookie before them. */
const ATTRIBUTES = new Set(['expires', 'path', 'comment', 'domain', 'max-age', 'secure', 'httponly', 'version', 'samesite']);
const LONGEST_ATTRIBUTE = 'partitioned'.length;
/** `Morsel._flags`: attributes that may come without a value. */
const FLAGS = new Set(['secure', 'httponly']);
/** `_is_legal_key`: names `Morsel.set` accepts; others raise `CookieError`. */
const LEGAL_NAME = /^[A-Za-z0-9!#$%&'*+\-.^_`|~:]+$/;

interface Pair {
  key: string;
  value: string | undefined;
  /** Where the next match starts: after the pair, its trailing whitespace and a `;` if one follows. */
  end: number;
}

/**
 * `_CookiePattern.match(text, at)`: optional whitespace, a name (the shortest that lets the rest
 * match), optionally `=` and a value (a quoted string, an `expires` date, or a run of value
 * characters), then whitespace, a `;` or the end.
 */
function pairAt(text: string, at: number): Pair | undefined {
  const start = skipWhitespace(text, at);
  const nameRunEnd = runEnd(text, start, NAME_CHARACTERS);
  if (nameRunEnd === start) return undefined;
  return pairNamedWithinRun(text, start, nameRunEnd) ?? pairNamedByRun(text, start, nameRunEnd);
}

/**
 * A pair whose name is a shorter part of the run of name characters (which holds `=`): it can end
 * only at an `=`, since the next character is neither whitespace, `;` nor the end, and every value
 * starting inside the run ends where the run of value characters does.
 */
function pairNamedWithinRun(text: string, start: number, nameRunEnd: number): Pair | undefined {
  const valueRun = runEnd(text, nameRunEnd, VALUE_CHARACTERS);
  const afterValueRun = terminatorEnd(text, valueRun);
  for (let nameEnd = start + 1; nameEnd < nameRunEnd; nameEnd += 1) {
    if (text[nameEnd] !== '=') continue;
    const valueStart = nameEnd + 1;
    const valued =
      valueStart === nameRunEnd
        ? valueAfterEquals(text, valueStart)
        : (datedValue(text, valueStart) ?? (afterValueRun === undefined ? undefined : { value: text.slice(valueStart, valueRun), end: afterValueRun }));
    if (valued !== undefined) return { key: text.slice(start, nameEnd), ...valued };
  }
  return undefined;
}

/** A pair named by the whole run: `=` and a value after optional whitespace, or no value. */
function pairNamedByRun(text: string, start: number, nameRunEnd: number): Pair | undefined {
  const key = text.slice(start, nameRunEnd);
  const equals = skipWhitespace(text, nameRunEnd);
  if (text[equals] === '=') {
    const valued = valueAfterEquals(text, equals + 1);
    if (valued !== undefined) return { key, ...valued };
  }
  const end = terminatorEnd(text, nameRunEnd);
  return end === undefined ? undefined : { key, value: undefined, end };
}

/** The value after an `=` at `afterEquals - 1`: `\s*` then the value's alternatives in order, then `\s*` given back one character at a time. */
function valueAfterEquals(text: string, afterEquals: number): { value: string; end: number } | undefined {
  const valueStart = skipWhitespace(text, afterEquals);
  const quoted = quotedValue(text, valueStart) ?? datedValue(text, valueStart);
  if (quoted !== undefined) return quoted;
  const valueEnd = runEnd(text, valueStart, VALUE_CHARACTERS);
  const end = terminatorEnd(text, valueEnd);
  if (end !== undefined) return { value: text.slice(valueStart, valueEnd), end };
  // Every alternative failed at the first non-space: an empty value before the last space matches.
  return valueStart > afterEquals ? { value: '', end: valueStart } : undefined;
}

/** `"(?:[^\\"]|\\.)*"`: a quoted string, escapes included, that the terminator follows. */
function quotedValue(text: string, start: number): { value: string; end: number } | undefined {
  if (text[start] !== '"') return undefined;
  for (let at = start + 1; at < text.length; at += 1) {
    const character = text[at];
    if (character === '"') {
      const end = terminatorEnd(text, at + 1);
      return end === undefined ? undefined : { value: text.slice(start, at + 1), end };
    }
    if (character === '\\') {
      if (at + 1 >= text.length || text[at + 1] === '\n') return undefined;
      at += 1;
    }
  }
  return undefined;
}

/** `\w{3},\s[\w\d\s-]{9,11}\s[\d:]{8}\sGMT`: an `expires` date, that the terminator follows. */
function datedValue(text: string, start: number): { value: string; end: number } | undefined {
  if (text[start + 3] !== ',') return undefined; // most values, without running the expression
  DATE.lastIndex = start;
  const date = DATE.exec(text);
  if (date === null) return undefined;
  const end = terminatorEnd(text, start + date[0].length);
  return end === undefined ? undefined : { value: date[0], end };
}

const DATE = /\w{3},[ \t\n\r\f\v][\w \t\n\r\f\v-]{9,11}[ \t\n\r\f\v][\d:]{8}[ \t\n\r\f\v]GMT/y;

/** `\s*(\s+|;|$)` at `at`: past the whitespace and a `;` after it, or just the whitespace, or the end; undefined if none follows. */
function terminatorEnd(text: string, at: number): number | undefined {
  const after = skipWhitespace(text, at);
  if (text[after] === ';') return after + 1;
  if (after === text.length || after > at) return after;
  return undefined;
}

function skipWhitespace(text: string, at: number): number {
  return runEnd(text, at, WHITESPACE);
}

/** Where the run of `characters` from `at` ends (character classes as tables: this walks every byte of a `cookie` line). */
function runEnd(text: string, at: number, characters: Uint8Array): number {
  let end = at;
  while (end < text.length && characters[text.charCodeAt(end)] === 1) end += 1;
  return end;
}

function characterClass(characters: string): Uint8Array {
  const table = new Uint8Array(0x10000);
  for (const character of characters) table[character.charCodeAt(0)] = 1;
  return table;
}

/** `\s` under `re.ASCII`. */
const WHITESPACE = characterClass(' \t\n\r\f\v');
/** `_LegalKeyChars` under `re.ASCII`. */
const NAME_CHARACTER_LIST = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_!#%&'~`><@,:/$*+-.^|)(?}{=";
const NAME_CHARACTERS = characterClass(NAME_CHARACTER_LIST);
/** `_LegalValueChars`: the name characters and brackets. */
const VALUE_CHARACTERS = characterClass(`${NAME_CHARACTER_LIST}[]`);
