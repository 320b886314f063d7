import { describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/index.js';
import { describeStoreContract, jsonResponse } from './contract.js';

describeStoreContract('memory', async () => createStore(undefined, { memoryMaxBytes: 64 * 1024 * 1024 }));

describe('memory store bounds', () => {
  it('evicts the least recently used entries to stay within its byte bound, and forgets their tags', async () => {
    const store = createStore(undefined, { memoryMaxBytes: 1024 * 1024 });
    const body = Buffer.alloc(100 * 1024, 'x');
    for (let index = 0; index < 30; index += 1) {
      const { mark } = await store.lookup(`key-${index}`);
      await store.store(`key-${index}`, { ...jsonResponse('x'), body }, { tags: ['Big'], ttlSeconds: 60, mark });
    }
    const cached = await Promise.all(
      Array.from({ length: 30 }, async (_, index) => (await store.lookup(`key-${index}`)).entry !== undefined),
    );
    const kept = cached.filter(Boolean).length;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThanOrEqual(10);
    expect(cached.slice(-kept).every(Boolean)).toBe(true);
    expect(await store.invalidate(['Big'])).toBe(kept);
  });

  it('declines an entry larger than the whole store', async () => {
    const store = createStore(undefined, { memoryMaxBytes: 1024 * 1024 });
    const { mark } = await store.lookup('huge');
    const huge = { ...jsonResponse('x'), body: Buffer.alloc(2 * 1024 * 1024) };
    expect(await store.store('huge', huge, { tags: ['A'], ttlSeconds: 60, mark })).toBe(false);
    expect((await store.lookup('huge')).entry).toBeUndefined();
  });

  it('refuses old marks once the invalidation records they need have been forgotten', async () => {
    const store = createStore(undefined, { memoryMaxBytes: 1024 * 1024 });
    const missedLongAgo = await store.lookup('query');
    for (let index = 0; index < 60_000; index += 1) await store.invalidate([`Product:${index}`]);
    const options = { tags: ['Never:invalidated'], ttlSeconds: 60 };
    expect(await store.store('query', jsonResponse('x'), { ...options, mark: missedLongAgo.mark })).toBe(false);
    const missedNow = await store.lookup('query');
    expect(await store.store('query', jsonResponse('x'), { ...options, mark: missedNow.mark })).toBe(true);
  });
});
