import { describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/index.js';
import { MemoryStore } from '../../src/store/memory.js';
import { describeStoreContract, jsonResponse } from './contract.js';
import { memoryKeptByAsync } from '../support/heap.js';

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

  // The CPU audit: 32 MiB held 46,538 small entries in about 68 MB; a tag of an entry's own makes a
  // set in the tag index, which was not counted.
  it.each([
    ['one tag of its own and four shared', (index: number) => [`e:Todo:${index}`, 'u:Todo', 't:Todo', 'q:todo', 'b:PUBLIC']],
    ['twenty tags of its own', (index: number) => Array.from({ length: 20 }, (_, tag) => `e:Todo:${index}:${tag}`)],
  ])('keeps no more memory than its bound when full of small answers with %s', async (_name, tagsOf) => {
    const bound = 4 * 1024 * 1024;
    // Made before the measure: its invalidation records are a fixed cost, apart from the bound.
    const filled = createStore(undefined, { memoryMaxBytes: bound });
    const { keptBytes, result: store } = await memoryKeptByAsync(async () => {
      for (let index = 0; index < 20_000; index += 1) {
        const body = Buffer.from(`{"data":{"todo":{"id":"${index}","title":"Buy milk ${index}","done":false}}}`);
        const { mark } = await filled.lookup(`PUBLIC/${index}`);
        await filled.store(`PUBLIC/${'k'.repeat(40)}${index}`, { ...jsonResponse('x'), body, headers: [['cache-control', 'public, max-age=60'], ['date', 'Fri, 27 Nov 2026 12:00:00 GMT']] }, { tags: tagsOf(index), ttlSeconds: 60, mark });
      }
      return filled;
    });
    expect((await store.lookup(`PUBLIC/${'k'.repeat(40)}19999`)).entry).toBeDefined();
    expect(keptBytes).toBeLessThan(bound * 1.1);
  });

  // The review: a key stored again (an SWR refresh) counted none of the sets its first entry made.
  it('counts the tag sets of an entry stored again under the same key', async () => {
    const store = new MemoryStore({ maxBytes: 1024 * 1024 });
    const tags = Array.from({ length: 20 }, (_, tag) => `e:Todo:1:${tag}`);
    for (let round = 0; round < 2; round += 1) {
      const { mark } = await store.lookup('PUBLIC/todo');
      await store.store('PUBLIC/todo', jsonResponse('x'), { tags, ttlSeconds: 60, mark });
    }
    const sizes = (store as unknown as { entries: { calculatedSize: number } }).entries;
    const fresh = new MemoryStore({ maxBytes: 1024 * 1024 });
    await fresh.store('PUBLIC/todo', jsonResponse('x'), { tags, ttlSeconds: 60, mark: (await fresh.lookup('PUBLIC/todo')).mark });
    expect(sizes.calculatedSize).toBe((fresh as unknown as { entries: { calculatedSize: number } }).entries.calculatedSize);
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
