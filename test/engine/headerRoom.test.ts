import { describe, expect, it } from 'vitest';
import { fitToEnvoyLimits, fittedRequestChanges, hitFitsEnvoyLimits, immediateFits } from '../../src/engine/headerRoom.js';
import type { HeaderList } from '../../src/http/index.js';

/** `n` headers as Envoy holds them: `:status` first. */
function headers(n: number, valueBytes = 1): Array<[string, string]> {
  return [[':status', '200'], ...Array.from({ length: n - 1 }, (_, i): [string, string] => [`x-h${i}`, 'v'.repeat(valueBytes)])];
}

const statusAndDebug = { set: [['svc-cache', 'PASS'], ['svc-debug-pass-reason', 'mutation'], ['vary', 'x-team']] as Array<[string, string]>, remove: [] };

describe('fitToEnvoyLimits', () => {
  it('leaves the changes alone when the map stays within 100 headers', () => {
    expect(fitToEnvoyLimits(headers(97), statusAndDebug)).toEqual({ changes: statusAndDebug, fits: true });
  });

  it("drops svc-cache's own headers first, keeping the others", () => {
    expect(fitToEnvoyLimits(headers(98), statusAndDebug)).toEqual({ changes: { set: [['vary', 'x-team']], remove: [] }, fits: true });
  });

  it('counts a header it replaces once, and one it removes not at all', () => {
    const present: Array<[string, string]> = [...headers(98), ['svc-cache', 'old'], ['x-gone', 'v']];
    const changes = { set: [['svc-cache', 'MISS']] as Array<[string, string]>, remove: ['x-gone'] };
    expect(fitToEnvoyLimits(present, changes).changes).toEqual(changes);
  });

  it('counts every value of a repeated name it sets', () => {
    const twice = { set: [['vary', 'a'], ['vary', 'b'], ['svc-cache', 'MISS']] as Array<[string, string]>, remove: [] };
    expect(fitToEnvoyLimits(headers(98), twice).changes.set).toEqual([['vary', 'a'], ['vary', 'b']]);
  });

  it('counts the content-length that comes with a replaced body', () => {
    const status = { set: [['svc-cache', 'MISS']] as Array<[string, string]>, remove: [] };
    expect(fitToEnvoyLimits(headers(99), status).changes).toEqual(status);
    expect(fitToEnvoyLimits(headers(99), status, Buffer.from('{}')).changes.set).toEqual([]);
  });

  it('keeps the map within 60 KiB of names and values', () => {
    // `:status` 200 (10 bytes), `x-big` and its value, `svc-cache` MISS (13 bytes): 61,440 in all, the limit.
    const status = { set: [['svc-cache', 'MISS']] as Array<[string, string]>, remove: [] };
    const atLimit: Array<[string, string]> = [[':status', '200'], ['x-big', 'v'.repeat(61_440 - 10 - 5 - 13)]];
    expect(fitToEnvoyLimits(atLimit, status)).toEqual({ changes: status, fits: true });
    const overLimit: Array<[string, string]> = [[':status', '200'], ['x-big', 'v'.repeat(61_440 - 10 - 5 - 13 + 1)]];
    expect(fitToEnvoyLimits(overLimit, status)).toEqual({ changes: { set: [], remove: [] }, fits: true });
  });

  it('says when even without its own headers the map is over', () => {
    expect(fitToEnvoyLimits(headers(100), statusAndDebug)).toEqual({ changes: { set: [['vary', 'x-team']], remove: [] }, fits: false });
  });
});

describe('hitFitsEnvoyLimits', () => {
  // A HIT adds :status, content-type, svc-cache, age and (a stale one) svc-cache-stale, and for a
  // compressed entry content-encoding and vary.
  const scope: Array<[string, string]> = [['cache-control', 'private, no-cache'], ['vary', 'x-team']];
  const entry = (count: number, encoding: 'identity' | 'gzip' = 'gzip', valueBytes = 1) => ({ headers: headers(count + 1, valueBytes).slice(1), encoding, contentType: 'application/json' });

  it('fits 93 stored headers of a compressed entry with the seven a HIT may add, not 94', () => {
    expect(hitFitsEnvoyLimits(entry(93), [])).toBe(true);
    expect(hitFitsEnvoyLimits(entry(94), [])).toBe(false);
  });

  it('fits 95 of an entry stored as the origin sent it, which adds no coding headers', () => {
    expect(hitFitsEnvoyLimits(entry(95, 'identity'), [])).toBe(true);
    expect(hitFitsEnvoyLimits(entry(96, 'identity'), [])).toBe(false);
  });

  it("counts a scope's headers", () => {
    expect(hitFitsEnvoyLimits(entry(91), scope)).toBe(true);
    expect(hitFitsEnvoyLimits(entry(92), scope)).toBe(false);
  });

  it('keeps the HIT within 60 KiB of names and values', () => {
    expect(hitFitsEnvoyLimits({ ...entry(0), headers: [['x-big', 'v'.repeat(58 * 1024)]] }, [])).toBe(true);
    expect(hitFitsEnvoyLimits({ ...entry(0), headers: [['x-big', 'v'.repeat(59 * 1024)], ['x-more', 'v'.repeat(1024)]] }, [])).toBe(false);
  });
});

describe('immediateFits', () => {
  it('says whether an immediate response, its :status counted, is within the limits', () => {
    expect(immediateFits(headers(100).slice(1))).toBe(true);
    expect(immediateFits(headers(101).slice(1))).toBe(false);
  });
});

describe('fittedRequestChanges', () => {
  const crowded = (n: number): HeaderList => Array.from({ length: n }, (_, i): [string, string] => [`x-h-${i}`, 'v']);

  it('leaves out the removal of a header the request lacks, which changes nothing', () => {
    expect(fittedRequestChanges(crowded(3), { set: [], remove: ['accept-encoding', 'x-h-1'] })).toEqual({ set: [], remove: ['x-h-1'] });
    expect(fittedRequestChanges(crowded(101), { set: [], remove: ['accept-encoding'] })).toEqual({ set: [], remove: [] });
  });

  it("refuses changes that leave the map over Envoy's limits, counting a replaced body's content-length", () => {
    expect(fittedRequestChanges(crowded(101), { set: [], remove: ['x-h-1'] })).toEqual({ set: [], remove: ['x-h-1'] });
    expect(fittedRequestChanges(crowded(102), { set: [], remove: ['x-h-1'] })).toBeUndefined();
    expect(fittedRequestChanges(crowded(99), { set: [], remove: [] }, Buffer.from('{}'))).toEqual({ set: [], remove: [] });
    expect(fittedRequestChanges(crowded(100), { set: [], remove: [] }, Buffer.from('{}'))).toBeUndefined();
    expect(fittedRequestChanges([['x-big', 'v'.repeat(60 * 1024)]], { set: [[':path', '/graphql']], remove: [] })).toBeUndefined();
  });
});
