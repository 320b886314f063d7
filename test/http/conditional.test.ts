import { describe, expect, it } from 'vitest';
import { isNotModified } from '../../src/http/conditional.js';

const STORED: Array<[string, string]> = [['etag', '"a,b"'], ['last-modified', 'Wed, 21 Oct 2026 07:28:00 GMT']];

describe('isNotModified', () => {
  it.each<[string, Array<[string, string]>, boolean]>([
    ['the stored tag', [['if-none-match', '"a,b"']], true],
    ['the stored tag, weak', [['if-none-match', 'W/"a,b"']], true],
    ['the stored tag among others, a comma inside one', [['if-none-match', '"x,y", W/"a,b"']], true],
    ['the stored tag on a second line', [['if-none-match', '"x"'], ['if-none-match', '"a,b"']], true],
    ['any tag', [['if-none-match', ' * ']], true],
    ['another tag', [['if-none-match', '"a"']], false],
    ['an unquoted tag', [['if-none-match', 'a,b']], false],
    ['an unterminated tag', [['if-none-match', '"a,b']], false],
    ['no later change', [['if-modified-since', 'Wed, 21 Oct 2026 07:28:00 GMT']], true],
    ['a change since', [['if-modified-since', 'Wed, 21 Oct 2026 07:27:59 GMT']], false],
    ['a date that does not parse', [['if-modified-since', 'yesterday']], false],
    ['If-None-Match, which decides alone', [['if-none-match', '"a"'], ['if-modified-since', 'Wed, 21 Oct 2026 07:28:00 GMT']], false],
    ['no precondition', [], false],
  ])('a GET naming %s: %s', (_case, request, expected) => {
    expect(isNotModified('GET', request, STORED)).toBe(expected);
  });

  it('never answers another method 304', () => {
    expect(isNotModified('POST', [['if-none-match', '"a,b"']], STORED)).toBe(false);
    expect(isNotModified('HEAD', [['if-none-match', '*']], STORED)).toBe(false);
  });

  it('needs the stored validator it compares with', () => {
    expect(isNotModified('GET', [['if-none-match', '"a,b"']], [])).toBe(false);
    expect(isNotModified('GET', [['if-modified-since', 'Wed, 21 Oct 2026 07:28:00 GMT']], [['etag', '"a,b"']])).toBe(false);
    expect(isNotModified('GET', [['if-none-match', '"a"']], [['etag', 'not-a-tag']])).toBe(false);
  });
});
