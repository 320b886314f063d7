import { describe, expect, it } from 'vitest';
import { simpleCookieReading } from '../../src/http/simpleCookie.js';

// Each expectation is what Python 3.11's `SimpleCookie().load(text)` reads (`coded_value` by
// name), run on the same text; `undefined` where it rejects the text or raises.
describe('simpleCookieReading', () => {
  it.each([
    ['plain pairs', 'locale=de; theme=dark', { locale: 'de', theme: 'dark' }],
    ['a quoted value, kept with its quotes, a `;` inside one', 'locale="de"; a="x;y"', { locale: '"de"', a: '"x;y"' }],
    ['pairs split on whitespace, spaces around `=` and `;`', 'a=1 b=2;c=3; d = 4 ;  e=5', { a: '1', b: '2', c: '3', d: '4', e: '5' }],
    ['an expires date, with its comma and spaces', 'a=Wed, 09 Jun 2021 10:18:14 GMT; b=2', { a: 'Wed, 09 Jun 2021 10:18:14 GMT', b: '2' }],
    ['equals signs and brackets in a value', 'a==b=c; d=[x]', { a: '=b=c', d: '[x]' }],
    ['the last of a repeated name', 'locale=de; locale=fr', { locale: 'fr' }],
    ['names in their own case', 'Session=s; session=t', { Session: 's', session: 't' }],
    ['attributes read as the cookie before them', 'locale=de; path=/; secure; httponly; theme=x', { locale: 'de', theme: 'x' }],
    ['RFC 2965 attributes', '$Version=1; locale=de; $Path=/', { locale: 'de' }],
    ['nothing past a value it cannot read', 'locale=de; consent={"a":1}', { locale: 'de' }],
    ['nothing past a quote inside a value', 'a=x"y; locale=de', {}],
    ['nothing past a backslash', 'a=\\x; locale=de', {}],
    ['nothing past a non-ASCII character', 'a=\u00e9; locale=de', {}],
    ['nothing past an empty pair', 'locale=de;;b=1', { locale: 'de' }],
    ['an empty value before a space, then nothing past an unclosed quote', 'a= "x; locale=de', { a: '' }],
  ])('reads %s', (_case, text, expected) => {
    expect(Object.fromEntries(simpleCookieReading(text) ?? [])).toEqual(expected);
    expect(simpleCookieReading(text)).toBeDefined();
  });

  it.each([
    ['a name without a value', 'flag; locale=de'],
    ['a space within a value', 'a=hello world; locale=de'],
    ['an attribute before any cookie', 'path=/; locale=de'],
    ['a name it matches but will not set (it raises)', 'a/b=1; locale=de'],
    ['an RFC 2965 attribute it does not know after a cookie (it raises)', 'locale=de; $Foo=1'],
    ['`partitioned`, an attribute from Python 3.14 on', 'locale=de; partitioned'],
  ])('reads no cookie from a text with %s', (_case, text) => {
    expect(simpleCookieReading(text)).toBeUndefined();
  });
});
