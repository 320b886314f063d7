import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MissCoalescer } from '../../src/engine/coalescing.js';

/** Waits are timers: fake ones make every bound exact and no test sleeps. */
describe('MissCoalescer', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('lets one request lead a key and the others wait until it releases', async () => {
    const coalescer = new MissCoalescer();
    const leadership = coalescer.lead('k');
    expect(leadership).toEqual({ release: expect.any(Function) });
    expect(coalescer.lead('k')).toBeUndefined();
    const waiting = coalescer.follow('k', 1000);
    leadership!.release();
    leadership!.release();
    expect(await waiting).toBe(true);
    expect(coalescer.lead('k')).toEqual({ release: expect.any(Function) });
  });

  it('keys leadership per key: another key is led independently', () => {
    const coalescer = new MissCoalescer();
    coalescer.lead('a');
    expect(coalescer.lead('b')).toEqual({ release: expect.any(Function) });
  });

  it('bounds the wait at exactly waitMs and has nothing to wait for without a leader', async () => {
    const coalescer = new MissCoalescer();
    expect(await coalescer.follow('none', 1000)).toBe(false);
    coalescer.lead('k');
    let settled: boolean | undefined;
    void coalescer.follow('k', 50).then((finished) => (settled = finished));
    await vi.advanceTimersByTimeAsync(49);
    expect(settled).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(settled).toBe(false);
    expect(await coalescer.follow('k', 0)).toBe(false);
  });

  it('forgets a leader that never reports back after leaderTimeoutMs, releasing its followers', async () => {
    const coalescer = new MissCoalescer(30);
    coalescer.lead('k');
    const waiting = coalescer.follow('k', 1000);
    await vi.advanceTimersByTimeAsync(29);
    expect(coalescer.lead('k')).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(await waiting).toBe(true);
    expect(coalescer.lead('k')).toEqual({ release: expect.any(Function) });
  });
});

describe('MissCoalescer bounds', () => {
  it('stops coalescing past maxLeaders fetches in flight', () => {
    const coalescer = new MissCoalescer(30_000, 2);
    expect(coalescer.lead('a')).toEqual({ release: expect.any(Function) });
    const b = coalescer.lead('b');
    expect(b).toEqual({ release: expect.any(Function) });
    expect(coalescer.lead('c')).toBeUndefined();
    b!.release();
    expect(coalescer.lead('c')).toEqual({ release: expect.any(Function) });
  });
});
