import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PendingInvalidations } from '../../src/engine/pendingInvalidations.js';

describe('PendingInvalidations', () => {
  let applied: Array<readonly string[] | 'everything'>;
  let failing: number;
  let failures: number[];
  let pending: PendingInvalidations;

  beforeEach(() => {
    vi.useFakeTimers();
    applied = [];
    failing = 0;
    failures = [];
    pending = new PendingInvalidations(
      async (what) => {
        applied.push(what);
        if (failing > 0) {
          failing -= 1;
          throw new Error('Command timed out');
        }
      },
      (_error, count) => failures.push(count),
    );
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('retries after 100 ms, merging what failed meanwhile', async () => {
    pending.add(['Todo:1', 'Todo']);
    pending.add(['Todo', 'User:2']);
    expect(pending.pending).toBe(true);
    await vi.advanceTimersByTimeAsync(99);
    expect(applied).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(applied).toEqual([['Todo:1', 'Todo', 'User:2']]);
    expect(pending.pending).toBe(false);
  });

  it('backs off while the store keeps failing, twice as long each time up to 5 s, then applies everything kept', async () => {
    failing = 8;
    pending.add(['Todo:1']);
    await vi.advanceTimersByTimeAsync(100 + 200 + 400 + 800 + 1600 + 3200 + 5000 + 5000);
    expect(failures).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    pending.add(['Todo:2']);
    await vi.advanceTimersByTimeAsync(4999);
    expect(applied).toHaveLength(8);
    await vi.advanceTimersByTimeAsync(1);
    expect(applied.at(-1)).toEqual(['Todo:1', 'Todo:2']);
    expect(pending.pending).toBe(false);
  });

  it('empties the whole store instead past 10,000 kept tags', async () => {
    failing = 1;
    pending.add(Array.from({ length: 6000 }, (_, i) => `Todo:${i}`));
    await vi.advanceTimersByTimeAsync(100);
    pending.add(Array.from({ length: 6000 }, (_, i) => `User:${i}`));
    await vi.advanceTimersByTimeAsync(200);
    expect(applied.at(-1)).toBe('everything');
    expect(pending.pending).toBe(false);
  });

  it('retries at once when the store connects again, its backoff forgotten', async () => {
    failing = 5;
    pending.add(['Todo:1']);
    await vi.advanceTimersByTimeAsync(100 + 200 + 400 + 800 + 1600);
    expect(failures).toEqual([1, 2, 3, 4, 5]);
    pending.retryNow();
    await vi.advanceTimersByTimeAsync(0);
    expect(applied).toHaveLength(6);
    expect(pending.pending).toBe(false);
  });

  it('starts its backoff over when the retry at a new connection fails', async () => {
    failing = 7;
    pending.add(['Todo:1']);
    await vi.advanceTimersByTimeAsync(100 + 200 + 400 + 800 + 1600 + 3200);
    pending.retryNow();
    await vi.advanceTimersByTimeAsync(0);
    expect([applied.length, failures.at(-1)]).toEqual([7, 1]);
    await vi.advanceTimersByTimeAsync(199);
    expect(applied).toHaveLength(7);
    await vi.advanceTimersByTimeAsync(1);
    expect([applied.length, pending.pending]).toEqual([8, false]);
  });

  // A review: a connection made again while a retry ran (a stalled Redis whose connection was
  // replaced) left the next try 200 ms away.
  it('tries again at once when a retry running as the store connects again fails, and backs off as usual after', async () => {
    let failRunning: (error: Error) => void = () => {};
    const applied: unknown[] = [];
    const held = new PendingInvalidations(
      (what) => {
        applied.push(what);
        return applied.length === 1 ? new Promise((_, reject) => (failRunning = reject)) : Promise.reject(new Error('still down'));
      },
      () => {},
    );
    held.add(['Todo:1']);
    await vi.advanceTimersByTimeAsync(100);
    held.retryNow();
    failRunning(new Error('Connection is closed.'));
    await vi.advanceTimersByTimeAsync(0);
    expect(applied).toHaveLength(2);
    // Two failures since the connection was made again: 400 ms.
    await vi.advanceTimersByTimeAsync(399);
    expect(applied).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(applied).toHaveLength(3);
  });

  it('does nothing at a new connection when nothing waits', async () => {
    pending.retryNow();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(applied).toEqual([]);
  });

  it('empties the whole store when everything was asked for, whatever tags were kept', async () => {
    pending.add(['Todo:1']);
    pending.add('everything');
    pending.add(['User:2']);
    await vi.advanceTimersByTimeAsync(100);
    expect(applied).toEqual(['everything']);
    expect(pending.pending).toBe(false);
  });
});
