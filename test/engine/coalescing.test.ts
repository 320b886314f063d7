import { describe, expect, it } from 'vitest';
import { MissCoalescer } from '../../src/engine/coalescing.js';

describe('MissCoalescer', () => {
  it('lets one request lead a key and the others wait until it releases', async () => {
    const coalescer = new MissCoalescer();
    const leadership = coalescer.lead('k');
    expect(leadership).toBeDefined();
    expect(coalescer.lead('k')).toBeUndefined();
    const waiting = coalescer.follow('k', 1000);
    leadership!.release();
    leadership!.release();
    expect(await waiting).toBe(true);
    expect(coalescer.lead('k')).toBeDefined();
  });

  it('bounds the wait and has nothing to wait for without a leader', async () => {
    const coalescer = new MissCoalescer();
    expect(await coalescer.follow('none', 1000)).toBe(false);
    coalescer.lead('k');
    const started = Date.now();
    expect(await coalescer.follow('k', 50)).toBe(false);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await coalescer.follow('k', 0)).toBe(false);
  });

  it('forgets a leader that never reports back, releasing its followers', async () => {
    const coalescer = new MissCoalescer(30);
    coalescer.lead('k');
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(coalescer.lead('k')).toBeDefined();
  });
});

describe('MissCoalescer bounds', () => {
  it('stops coalescing past maxLeaders fetches in flight', () => {
    const coalescer = new MissCoalescer(30_000, 2);
    expect(coalescer.lead('a')).toBeDefined();
    const b = coalescer.lead('b');
    expect(b).toBeDefined();
    expect(coalescer.lead('c')).toBeUndefined();
    b!.release();
    expect(coalescer.lead('c')).toBeDefined();
  });
});
