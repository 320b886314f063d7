import { describe, expect, it } from 'vitest';
import { cookieNamesReadAs, cookieValues, type HeaderList } from '../../src/http/headers.js';

describe('cookieValues', () => {
  const headers: HeaderList = [
    [':method', 'GET'],
    ['cookie', 'session=a; theme=dark'],
    ['cookie', ' session = b ;flag; =anonymous; empty='],
  ];

  it('reads every occurrence of one cookie across the cookie lines, in order', () => {
    expect(cookieValues(headers, 'session')).toEqual(['a', 'b']);
    expect(cookieValues(headers, 'theme')).toEqual(['dark']);
    expect(cookieValues(headers, 'empty')).toEqual(['']);
    expect(cookieValues(headers, '')).toEqual(['anonymous']);
    expect(cookieValues(headers, 'flag')).toEqual([]);
    expect(cookieValues(headers, 'missing')).toEqual([]);
    expect(cookieValues([[':method', 'GET']], 'session')).toEqual([]);
  });

  it('reads the cookie lines once per header list, however many cookies are asked for', () => {
    const first = cookieValues(headers, 'session');
    expect(cookieValues(headers, 'session')).toBe(first);
    // Another list with the same lines is read on its own.
    expect(cookieValues([...headers], 'session')).not.toBe(first);
  });
});

describe('cookieNamesReadAs', () => {
  it.each([
    ['percent-escaped letters (PHP, Rack before 3.0)', 'l%6Fcale=de', 'locale', ['l%6Fcale']],
    ['a plus for a space, which PHP then makes an underscore', 'user+id=7', 'user_id', ['user+id']],
    ['a dot or a space PHP makes an underscore', 'user.id=7; user id=8', 'user_id', ['user.id', 'user id']],
    ['an escaped underscore', 'user%5Fid=7', 'user_id', ['user%5Fid']],
    ['PHP array syntax', 'locale[]=de; locale[x]=fr', 'locale', ['locale[]', 'locale[x]']],
    ['an unmatched bracket PHP makes an underscore', 'user[id=7', 'user_id', ['user[id']],
    ['not the name itself, nor other names', 'locale=fr; Locale=de; local%65s=x; l%6Fcal=y', 'locale', []],
  ])('finds %s', (_case, line, name, expected) => {
    expect(cookieNamesReadAs([['cookie', line]], name)).toEqual(expected);
  });
});
