import { describe, expect, it } from 'vitest';
import { cookieValues, type HeaderList } from '../../src/http/headers.js';

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
