import { describe, expect, it } from 'vitest';
import { irregularCookieLine } from '../../src/http/cookieLine.js';

describe('irregularCookieLine', () => {
  it.each([
    ['one pair', 'locale=de'],
    ['pairs as browsers join them', 'locale=de; theme=dark; _ga=GA1.2.3.4'],
    ['pairs without a space, or with several', 'a=1;b=2;   c=3'],
    ['an empty value, a quoted one', 'a=; b=""; c="x=y,z"'],
    ['token characters in names, commas and equals signs in values', "x!#$%&'*+-.^_`|~=1; consent=necessary,analytics; prefs=locale=de&theme=dark"],
    ['an empty line', ''],
  ])('finds %s regular', (_case, line) => {
    expect(irregularCookieLine(line)).toBe(false);
  });

  it.each([
    ['a space inside a value', 'name=John Smith; locale=de'],
    ['whitespace around a value or before an equals sign', 'locale=de ; a=1'],
    ['a tab', 'a=1;\tlocale=de'],
    ['a quote inside a value', 'a=x"locale=de'],
    ['a raw JSON value', 'consent={"a":1}; locale=de'],
    ['a backslash', 'a=x\\; locale=de'],
    ['an unclosed quote', 'a="x; locale=de'],
    ['a quoted value holding a separator', 'a="; locale; "; locale=de'],
    ['a name without a value', 'locale; locale=de'],
    ['an empty pair', 'locale=de;;b=1'],
    ['a trailing separator', 'locale=de;'],
    ['a name that is no token', 'a/b=1; locale=de'],
    ['an empty name', '=x; locale=de'],
    ['a non-ASCII character', 'a=\u00e9; locale=de'],
    ['U+0085 before a name, which Python strips', '\u0085locale=de'],
    ['a control character', 'a=\u001f; locale=de'],
    ['an attribute name SimpleCookie reads as such', 'path=/; locale=de'],
    ['an attribute name in another case', 'locale=de; Max-Age=1'],
    ['an RFC 2965 attribute', '$Version=1; locale=de'],
    ['a name Python 3.14 reads as an attribute', 'locale=de; partitioned=1'],
  ])('finds %s irregular', (_case, line) => {
    expect(irregularCookieLine(line)).toBe(true);
  });
});
