import { describe, expect, it } from 'vitest';
import { preconditionVerdict, type PreconditionVerdict } from '../../src/http/conditional.js';

const LAST_MODIFIED = 'Wed, 21 Oct 2026 07:28:00 GMT';
const STORED: Array<[string, string]> = [['etag', '"a,b"'], ['last-modified', LAST_MODIFIED]];

describe('preconditionVerdict', () => {
  it.each<[string, Array<[string, string]>, PreconditionVerdict]>([
    ['the stored tag', [['if-none-match', '"a,b"']], 'not-modified'],
    ['the stored tag, weak', [['if-none-match', 'W/"a,b"']], 'not-modified'],
    ['the stored tag among others, a comma inside one', [['if-none-match', '"x,y", W/"a,b"']], 'not-modified'],
    ['the stored tag on a second line', [['if-none-match', '"x"'], ['if-none-match', '"a,b"']], 'not-modified'],
    ['any tag', [['if-none-match', ' * ']], 'not-modified'],
    ['another tag', [['if-none-match', '"a"']], 'none'],
    ['an unquoted tag', [['if-none-match', 'a,b']], 'none'],
    ['an unterminated tag', [['if-none-match', '"a,b']], 'none'],
    ['no later change', [['if-modified-since', LAST_MODIFIED]], 'not-modified'],
    ['no later change, in RFC 850 form', [['if-modified-since', 'Wednesday, 21-Oct-26 07:28:00 GMT']], 'not-modified'],
    ['no later change, in asctime form', [['if-modified-since', 'Wed Oct 21 07:28:00 2026']], 'not-modified'],
    ['a change since', [['if-modified-since', 'Wed, 21 Oct 2026 07:27:59 GMT']], 'none'],
    ['a date that is no HTTP-date', [['if-modified-since', '2030']], 'none'],
    ['two dates, which are no one date', [['if-modified-since', LAST_MODIFIED], ['if-modified-since', 'Wed, 21 Oct 2026 07:27:59 GMT']], 'none'],
    ['If-None-Match, which decides alone', [['if-none-match', '"a"'], ['if-modified-since', LAST_MODIFIED]], 'none'],
    ['If-Match, which the origin evaluates first', [['if-match', '"a,b"'], ['if-none-match', '"a,b"']], 'for-the-origin'],
    ['If-Unmodified-Since, which the origin evaluates first', [['if-unmodified-since', LAST_MODIFIED]], 'for-the-origin'],
    ['no precondition', [], 'none'],
  ])('a GET naming %s', (_case, request, expected) => {
    expect(preconditionVerdict('GET', request, STORED)).toBe(expected);
  });

  it('leaves another method its 200', () => {
    expect(preconditionVerdict('POST', [['if-none-match', '"a,b"']], STORED)).toBe('none');
    expect(preconditionVerdict('POST', [['if-match', '"x"']], STORED)).toBe('none');
  });

  it('needs the stored validator it compares with', () => {
    expect(preconditionVerdict('GET', [['if-none-match', '"a,b"']], [])).toBe('none');
    expect(preconditionVerdict('GET', [['if-modified-since', LAST_MODIFIED]], [['etag', '"a,b"']])).toBe('none');
    expect(preconditionVerdict('GET', [['if-none-match', '"a"']], [['etag', 'not-a-tag']])).toBe('none');
  });
});
