import { describe, expect, it } from 'vitest';
import type { HeaderList } from '../../src/http/headers.js';
import { forbidsTransform, httpDate, initialAgeSeconds, staleLimits, storability } from '../../src/http/cacheControl.js';

const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);
const context = { keyedRequestHeaders: new Set(['accept', 'authorization']), now: NOW };
const at = (secondsFromNow: number) => new Date(NOW + secondsFromNow * 1000).toUTCString();

function judge(headers: HeaderList, status = 200) {
  return storability(status, headers, context);
}

describe('storability', () => {
  it('stores a 200 without freshness information for the rule to decide', () => {
    expect(judge([['content-type', 'application/json']])).toEqual({ storable: true, freshSeconds: undefined });
  });

  it.each([203, 204, 206, 301, 304, 400, 404, 500])('never stores status %i', (status) => {
    expect(judge([['cache-control', 'max-age=60']], status)).toEqual({ storable: false, reason: 'origin-status' });
  });

  it.each([
    ['no-store', 'origin-no-store'],
    ['NO-STORE', 'origin-no-store'],
    ['max-age=60, no-store', 'origin-no-store'],
    ['public, max-age=60, must-understand, no-store', 'origin-no-store'],
    ['private', 'origin-private'],
    ['private="set-cookie", max-age=60', 'origin-private'],
    ['s-maxage=60, Private', 'origin-private'],
    ['no-cache', 'origin-no-cache'],
    ['no-cache="set-cookie, x-user", max-age=60', 'origin-no-cache'],
    ['max-age=0', 'origin-max-age-zero'],
    ['s-maxage=0, max-age=60', 'origin-max-age-zero'],
    ['max-age=-1', 'origin-max-age-invalid'],
    ['max-age=1.5', 'origin-max-age-invalid'],
    ['max-age=abc', 'origin-max-age-invalid'],
    ['max-age=', 'origin-cache-control-invalid'],
    ['max-age', 'origin-max-age-invalid'],
    ['max-age=60 x', 'origin-cache-control-invalid'],
    ['max-age=60, max-age=120', 'origin-max-age-invalid'],
    ['s-maxage=abc, max-age=60', 'origin-max-age-invalid'],
  ])('Cache-Control %j: %s', (cacheControl, reason) => {
    expect(judge([['cache-control', cacheControl]])).toEqual({ storable: false, reason });
  });

  it.each([
    ['max-age=60', 60],
    ['public, max-age=60', 60],
    ['max-age="60"', 60],
    ['max-age=60, max-age=60', 60],
    ['s-maxage=30, max-age=60', 30],
    ['max-age=60, s-maxage=300', 300],
    ['MAX-AGE=45', 45],
    ['max-age = 60', 60],
    ['max-age=99999999999999999999', 2 ** 31],
    ['stale-while-revalidate=30, max-age=10, foo="a,b", bar', 10],
  ])('Cache-Control %j: fresh for %i s', (cacheControl, freshSeconds) => {
    expect(judge([['cache-control', cacheControl]])).toEqual({ storable: true, freshSeconds });
  });

  it('reads every cache-control line', () => {
    expect(judge([['cache-control', 'public'], ['cache-control', 'no-store']])).toEqual({ storable: false, reason: 'origin-no-store' });
    expect(judge([['cache-control', 'public'], ['cache-control', 'max-age=20']])).toEqual({ storable: true, freshSeconds: 20 });
    expect(judge([['cache-control', 'max-age=20'], ['cache-control', 'max-age=30']])).toEqual({ storable: false, reason: 'origin-max-age-invalid' });
  });

  it.each(['foo="bar, no-store', 'max-age=60, foo="x, private', 'no-store;', 'public; private', 'max-age=60, "private"', 'max-age=60; x=1', 'max-age=60, a b', 'max-age=60, x=', 'max-age=60, =x'])(
    'does not store an answer whose Cache-Control %j is outside the grammar, which other caches read otherwise',
    (cacheControl) => {
      expect(judge([['cache-control', cacheControl]])).toMatchObject({ storable: false });
    },
  );

  it.each(['max-age=60, , public', ' max-age=60 ,x="a,\\"b"', 'max-age = 60', 'max-age=60,', ''])('stores an answer whose Cache-Control %j is within it', (cacheControl) => {
    expect(judge([['cache-control', cacheControl]])).toMatchObject({ storable: true });
  });

  it('does not read directive names inside quoted values', () => {
    expect(judge([['cache-control', 'ext="no-store, private", max-age=5']])).toEqual({ storable: true, freshSeconds: 5 });
    expect(judge([['cache-control', 'ext="a\\"no-store", max-age=5']])).toEqual({ storable: true, freshSeconds: 5 });
  });

  describe('Pragma', () => {
    it('is no-cache when there is no Cache-Control', () => {
      expect(judge([['pragma', 'no-cache']])).toEqual({ storable: false, reason: 'origin-pragma-no-cache' });
      expect(judge([['pragma', 'x, No-Cache']])).toEqual({ storable: false, reason: 'origin-pragma-no-cache' });
      expect(judge([['pragma', 'no-cache'], ['cache-control', '']])).toEqual({ storable: false, reason: 'origin-pragma-no-cache' });
    });

    it('is ignored beside Cache-Control', () => {
      expect(judge([['pragma', 'no-cache'], ['cache-control', 'max-age=60']])).toEqual({ storable: true, freshSeconds: 60 });
    });

    it('other pragmas change nothing', () => {
      expect(judge([['pragma', 'x-no-cache']])).toEqual({ storable: true, freshSeconds: undefined });
    });
  });

  describe('Expires', () => {
    it.each(['0', '-1', 'yesterday', '', 'Thu, 31 Feb 2026 00:00:00 GMT', '2026-11-24T00:00:00Z'])('%j (invalid) is already expired', (expires) => {
      expect(judge([['expires', expires]])).toEqual({ storable: false, reason: 'origin-expired' });
    });

    it('in the past or now is expired', () => {
      expect(judge([['expires', at(-60)]])).toEqual({ storable: false, reason: 'origin-expired' });
      expect(judge([['expires', at(0)]])).toEqual({ storable: false, reason: 'origin-expired' });
    });

    it('counts from Date when present, else from now, less the age that Date shows (RFC 9111 section 4.2.3)', () => {
      expect(judge([['expires', at(120)]])).toEqual({ storable: true, freshSeconds: 120 });
      expect(judge([['expires', at(120)], ['date', at(-30)]])).toEqual({ storable: true, freshSeconds: 121 });
      expect(judge([['expires', at(-10)], ['date', at(-30)]])).toEqual({ storable: false, reason: 'origin-expired' });
      expect(judge([['expires', at(150)], ['date', at(30)]])).toEqual({ storable: true, freshSeconds: 120 });
      expect(judge([['expires', at(120)], ['date', 'nonsense']])).toEqual({ storable: true, freshSeconds: 120 });
    });

    it('is ignored when max-age or s-maxage is given (RFC 9111 section 5.3)', () => {
      expect(judge([['expires', '0'], ['cache-control', 'max-age=60']])).toEqual({ storable: true, freshSeconds: 60 });
      expect(judge([['expires', at(600)], ['cache-control', 's-maxage=5']])).toEqual({ storable: true, freshSeconds: 5 });
    });

    it('two lines that disagree mean stale; identical ones are one', () => {
      expect(judge([['expires', at(60)], ['expires', at(120)]])).toEqual({ storable: false, reason: 'origin-expired' });
      expect(judge([['expires', at(60)], ['expires', at(60)]])).toEqual({ storable: true, freshSeconds: 60 });
    });
  });

  describe('Age', () => {
    it('takes what an upstream cache already used off the lifetime', () => {
      expect(judge([['cache-control', 'max-age=60'], ['age', '20']])).toEqual({ storable: true, freshSeconds: 40 });
      expect(judge([['cache-control', 'max-age=60'], ['age', '60']])).toEqual({ storable: false, reason: 'origin-expired' });
      expect(judge([['expires', at(60)], ['age', '100']])).toEqual({ storable: false, reason: 'origin-expired' });
    });

    it('invalid means stale', () => {
      expect(judge([['cache-control', 'max-age=60'], ['age', 'x']])).toEqual({ storable: false, reason: 'origin-expired' });
      expect(judge([['cache-control', 'max-age=60'], ['age', '1'], ['age', '2']])).toEqual({ storable: false, reason: 'origin-expired' });
    });
  });

  describe('Vary', () => {
    it('* is never stored, wherever it appears', () => {
      expect(judge([['vary', '*']])).toEqual({ storable: false, reason: 'origin-vary-star' });
      expect(judge([['vary', 'accept'], ['vary', 'Origin, *']])).toEqual({ storable: false, reason: 'origin-vary-star' });
    });

    it('a header outside the key is not stored, and named', () => {
      expect(judge([['vary', 'Cookie']])).toEqual({ storable: false, reason: 'origin-vary', header: 'cookie' });
      expect(judge([['vary', 'Accept, Authorization'], ['vary', 'X-Tenant, Cookie']])).toEqual({
        storable: false,
        reason: 'origin-vary',
        header: 'x-tenant',
      });
    });

    it('headers in the key are satisfied, case-insensitively', () => {
      expect(judge([['vary', 'ACCEPT, authorization,,'], ['cache-control', 'max-age=9']])).toEqual({ storable: true, freshSeconds: 9 });
    });

    it('accept is satisfied only when the caller says so', () => {
      const withoutAccept = { keyedRequestHeaders: new Set<string>(), now: NOW };
      expect(storability(200, [['vary', 'accept']], withoutAccept)).toEqual({ storable: false, reason: 'origin-vary', header: 'accept' });
    });
  });

  describe('CDN-Cache-Control and Surrogate-Control (RFC 9213, Edge Architecture)', () => {
    it.each(['cdn-cache-control', 'surrogate-control'])('%s restricts what Cache-Control allows', (name) => {
      expect(judge([['cache-control', 'public, max-age=60'], [name, 'no-store']])).toEqual({ storable: false, reason: 'origin-no-store' });
      expect(judge([['cache-control', 'max-age=60'], [name, 'private']])).toEqual({ storable: false, reason: 'origin-private' });
      expect(judge([['cache-control', 'max-age=60'], [name, 'no-cache']])).toEqual({ storable: false, reason: 'origin-no-cache' });
      expect(judge([['cache-control', 'max-age=60'], [name, 'max-age=20']])).toEqual({ storable: true, freshSeconds: 20 });
      expect(judge([[name, 'max-age=20']])).toEqual({ storable: true, freshSeconds: 20 });
      expect(judge([[name, 'max-age=0']])).toEqual({ storable: false, reason: 'origin-max-age-zero' });
      expect(judge([['age', '5'], [name, 's-maxage=20']])).toEqual({ storable: true, freshSeconds: 15 });
      expect(judge([[name, 'max-age="20']])).toEqual({ storable: false, reason: 'origin-cache-control-invalid' });
    });

    it('reads each family apart, the shorter lifetime winning, and Surrogate-Control\'s targets and stale parts set aside', () => {
      expect(judge([['cdn-cache-control', 'max-age=30'], ['surrogate-control', 'max-age=20']])).toEqual({ storable: true, freshSeconds: 20 });
      expect(judge([['surrogate-control', 'max-age=30;edge, content="ESI/1.0";other']])).toEqual({ storable: true, freshSeconds: 30 });
      expect(judge([['surrogate-control', 'max-age=30+60']])).toEqual({ storable: true, freshSeconds: 30 });
      expect(judge([['surrogate-control', 'no-store;edge']])).toEqual({ storable: false, reason: 'origin-no-store' });
      expect(judge([['surrogate-control', 'content="ESI/1.0;x", max-age=30']])).toEqual({ storable: true, freshSeconds: 30 });
      expect(judge([['surrogate-control', 'content="a\\";b", max-age=30;edge']])).toEqual({ storable: true, freshSeconds: 30 });
    });

    it('never allows more than Cache-Control: a longer max-age, or one beside private, changes nothing', () => {
      expect(judge([['cache-control', 'max-age=60'], ['cdn-cache-control', 'max-age=600']])).toEqual({ storable: true, freshSeconds: 60 });
      expect(judge([['cache-control', 'private'], ['cdn-cache-control', 'max-age=600']])).toEqual({ storable: false, reason: 'origin-private' });
      expect(judge([['cache-control', 'max-age=60'], ['surrogate-control', 'content="ESI/1.0"']])).toEqual({ storable: true, freshSeconds: 60 });
    });
  });

  it('no-store wins over everything else', () => {
    expect(judge([['vary', '*'], ['cache-control', 'max-age=60'], ['cache-control', 'no-store']])).toEqual({
      storable: false,
      reason: 'origin-no-store',
    });
  });
});

describe('staleLimits', () => {
  const limits = (cacheControl: string) => staleLimits([['cache-control', cacheControl]]);

  it('takes CDN-Cache-Control and Surrogate-Control as bounds too: their must-revalidate forbids stale, their windows may only be shorter', () => {
    expect(staleLimits([['cache-control', 'max-age=60, stale-while-revalidate=300'], ['cdn-cache-control', 'max-age=30, must-revalidate']])).toEqual({ whileRevalidate: 0, ifError: 0 });
    expect(staleLimits([['cache-control', 'stale-while-revalidate=300, stale-if-error=300'], ['cdn-cache-control', 'stale-while-revalidate=0'], ['surrogate-control', 'stale-if-error=60']])).toEqual({
      whileRevalidate: 0,
      ifError: 60,
    });
    expect(staleLimits([['cache-control', 'stale-while-revalidate=30'], ['cdn-cache-control', 'stale-while-revalidate=300']])).toEqual({ whileRevalidate: 30, ifError: undefined });
  });

  it('leaves both windows to the rules when the origin says nothing of them', () => {
    expect(staleLimits([])).toEqual({ whileRevalidate: undefined, ifError: undefined });
    expect(limits('public, max-age=60')).toEqual({ whileRevalidate: undefined, ifError: undefined });
  });

  it("reads RFC 5861's windows, 0 included, each on its own", () => {
    expect(limits('max-age=60, stale-while-revalidate=30, stale-if-error=600')).toEqual({ whileRevalidate: 30, ifError: 600 });
    expect(limits('max-age=60, Stale-While-Revalidate="0"')).toEqual({ whileRevalidate: 0, ifError: undefined });
    expect(limits('max-age=60, stale-if-error=0')).toEqual({ whileRevalidate: undefined, ifError: 0 });
  });

  it.each(['stale-if-error', 'stale-if-error=soon', 'stale-if-error=-1', 'stale-if-error=5, stale-if-error=6'])('reads %s as no window at all', (directive) => {
    expect(limits(`max-age=60, ${directive}`).ifError).toBe(0);
  });

  it.each(['max-age=1, must-revalidate', 'max-age=1, proxy-revalidate', 's-maxage=1', 'MUST-REVALIDATE, max-age=60, stale-while-revalidate=30, stale-if-error=600'])(
    'forbids serving stale under %s (RFC 9111 section 4.2.4), whatever windows it gives',
    (cacheControl) => {
      expect(limits(cacheControl)).toEqual({ whileRevalidate: 0, ifError: 0 });
    },
  );

  it('reads every cache-control line', () => {
    expect(staleLimits([['cache-control', 'max-age=60, stale-if-error=600'], ['cache-control', 'must-revalidate']])).toEqual({ whileRevalidate: 0, ifError: 0 });
  });
});

describe('httpDate', () => {
  const expected = Date.UTC(1994, 10, 6, 8, 49, 37);
  it.each([
    ['Sun, 06 Nov 1994 08:49:37 GMT', expected],
    ['sun, 06 nov 1994 08:49:37 gmt', expected],
    ['Sunday, 06-Nov-94 08:49:37 GMT', expected],
    ['Sun Nov  6 08:49:37 1994', expected],
    ['Thu, 01 Jan 1970 00:00:00 GMT', 0],
  ])('%j', (value, epoch) => {
    expect(httpDate(value)).toBe(epoch);
  });

  it.each(['0', '', 'Sun, 06 Nov 1994 08:49:37', 'Sun, 06 Nov 1994 08:49:37 PST', 'Sun, 06 Foo 1994 08:49:37 GMT', 'Sun, 06 Nov 1994 24:00:00 GMT', '1994-11-06T08:49:37Z', 'Sat, 29 Feb 2025 00:00:00 GMT'])(
    '%j is invalid',
    (value) => {
      expect(httpDate(value)).toBeUndefined();
    },
  );
});

describe('initialAgeSeconds and forbidsTransform', () => {
  const now = Date.parse('2026-11-27T12:00:00.500Z');
  const secondsBefore = (seconds: number): string => new Date(now - seconds * 1000).toUTCString();

  it("reads an upstream cache's Age, 0 when absent or invalid", () => {
    expect([initialAgeSeconds([['age', '50']], now), initialAgeSeconds([], now), initialAgeSeconds([['age', 'soon']], now), initialAgeSeconds([['age', '1'], ['age', '2']], now)]).toEqual([50, 0, 0, 0]);
  });

  // The response audit: an answer nginx's proxy_cache held for 58 s (its Date kept, no Age) was
  // served fresh for the origin's whole max-age=60 after svc-cache stored it.
  it("counts the apparent age a Date in the past shows, the larger of it and Age, and not a Date ahead of svc-cache's clock", () => {
    expect([
      initialAgeSeconds([['date', secondsBefore(58)]], now),
      initialAgeSeconds([['date', secondsBefore(58)], ['age', '70']], now),
      initialAgeSeconds([['date', secondsBefore(5)], ['age', '30']], now),
      initialAgeSeconds([['date', secondsBefore(-120)]], now),
      initialAgeSeconds([['date', 'yesterday']], now),
      initialAgeSeconds([['date', secondsBefore(0)]], now),
    ]).toEqual([57, 70, 30, 0, 0, 0]);
    // The CI run: a Date of the second before, on an answer just made, is no second of age.
    expect([initialAgeSeconds([['date', new Date(Date.parse('2026-11-27T12:00:00Z')).toUTCString()]], Date.parse('2026-11-27T12:00:01.999Z'))]).toEqual([0]);
  });

  it('stores an answer an upstream cache held, only for what is left of its lifetime by its Date', () => {
    const context = { keyedRequestHeaders: new Set<string>(), now };
    expect(storability(200, [['cache-control', 'max-age=60'], ['date', secondsBefore(58)]], context)).toEqual({ storable: true, freshSeconds: 3 });
    expect(storability(200, [['cache-control', 'max-age=60'], ['date', secondsBefore(62)]], context)).toEqual({ storable: false, reason: 'origin-expired' });
    expect(storability(200, [['cache-control', 'max-age=1'], ['date', secondsBefore(0)]], context)).toEqual({ storable: true, freshSeconds: 1 });
  });

  it('finds no-transform on any cache-control line, in any case', () => {
    expect([forbidsTransform([['cache-control', 'max-age=60, No-Transform']]), forbidsTransform([['cache-control', 'public'], ['cache-control', 'no-transform']]), forbidsTransform([['cache-control', 'max-age=60']])]).toEqual([true, true, false]);
  });
});
