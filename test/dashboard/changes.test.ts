import { describe, expect, it } from 'vitest';
import { invalidationChange, purgeChange } from '../../src/sidecar/dashboardWiring.js';

const summary = { fields: ['_purgeTodo'], everything: false, tags: ['type:Todo'], soft: { everything: false, tags: [] } };

describe('the recent changes the sidecar records', () => {
  it('lists a purge the store applied, failed or did not confirm in time, each under its own result', () => {
    expect(purgeChange({ result: 'purged', removedEntries: 3, staleEntries: 0, ...summary })).toEqual({
      kind: 'purge',
      fields: ['_purgeTodo'],
      tags: ['type:Todo'],
      removedEntries: 3,
      staleEntries: 0,
      result: 'ok',
      mode: 'hard',
    });
    expect(purgeChange({ result: 'store-failed', error: 'down', ...summary })).toMatchObject({ result: 'failed', removedEntries: 0 });
    // Answered 503 before the store confirmed it: it may still apply, so it is not listed as failed.
    expect(purgeChange({ result: 'not-confirmed', awaited: 'store', ...summary })).toMatchObject({ result: 'not-confirmed', removedEntries: 0 });
  });

  it('lists no purge refused before it ran', () => {
    expect(purgeChange({ result: 'unauthorized' })).toBeUndefined();
    expect(purgeChange({ result: 'invalid' })).toBeUndefined();
  });

  it('lists a mutation invalidation with its policy, applied or failed', () => {
    expect(invalidationChange({ policy: 'Entity', from: 'answer', tags: 2, removedEntries: 5 })).toEqual({
      kind: 'invalidation',
      fields: ['mutationPolicy Entity'],
      tags: 2,
      removedEntries: 5,
      result: 'ok',
    });
    expect(invalidationChange({ policy: 'Entity', from: 'answer', failed: 'down' })).toMatchObject({ result: 'failed', tags: 0, removedEntries: 0 });
  });
});
