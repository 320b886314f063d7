import { afterEach, describe, expect, it, vi } from 'vitest';
import { LateInvalidations } from '../../src/engine/lateInvalidations.js';

describe('LateInvalidations', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('invalidates the tags again 1, 5 and 30 s later, merging what falls due in one second', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const applied: Array<[number, string[]]> = [];
    const late = new LateInvalidations(
      async (tags) => {
        applied.push([Date.now() - 1_000_000, tags.sort()]);
      },
      () => Date.now(),
    );
    late.add(['t:Todo']);
    await vi.advanceTimersByTimeAsync(300);
    late.add(['t:Todo', 't:User']);
    late.add([]);
    await vi.advanceTimersByTimeAsync(40_000);
    expect(applied).toEqual([
      [1_000, ['t:Todo']],
      [2_000, ['t:Todo', 't:User']],
      [5_000, ['t:Todo']],
      [6_000, ['t:Todo', 't:User']],
      [30_000, ['t:Todo']],
      [31_000, ['t:Todo', 't:User']],
    ]);
  });

  // The review: the timer armed for a later second was not moved for tags due earlier.
  it('moves its timer forward for tags due before the one it waits for, and applies nothing once closed', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const applied: number[] = [];
    const late = new LateInvalidations(
      async () => {
        applied.push(Date.now() - 1_000_000);
      },
      () => Date.now(),
    );
    late.add(['t:Todo']);
    await vi.advanceTimersByTimeAsync(6_000);
    late.add(['t:User']);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(applied).toEqual([1_000, 5_000, 7_000]);
    late.close();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(applied).toEqual([1_000, 5_000, 7_000]);
  });
});
