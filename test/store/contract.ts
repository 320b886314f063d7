import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compressBody, decompressBody, type CacheStore, type CachedResponse, type Lookup } from '../../src/store/index.js';

/**
 * What every CacheStore must do, registered against a factory so the in-memory store, a standalone
 * Redis and a Redis Cluster pass the very same tests. The factory returns a fresh, empty store
 * (for Redis: its own key prefix), ready to answer.
 */
export function describeStoreContract(name: string, createStore: () => Promise<CacheStore>): void {
  describe(`CacheStore contract: ${name}`, () => {
    let store: CacheStore;

    beforeEach(async () => {
      store = await createStore();
    });

    afterEach(async () => {
      await store.close();
    });

    /** Stores `response` the way the engine does: after a lookup that missed, with its mark. */
    async function storeAfterMiss(key: string, tags: readonly string[], response = jsonResponse(key), ttlSeconds = 60): Promise<boolean> {
      const { entry, mark } = await store.lookup(key);
      expect(entry).toBeUndefined();
      return store.store(key, response, { tags, ttlSeconds, mark });
    }

    async function isCached(key: string): Promise<boolean> {
      return (await store.lookup(key)).entry !== undefined;
    }

    it('misses an unknown key and hits it once stored, returning the response exactly', async () => {
      const response: CachedResponse = {
        body: Buffer.from('{"data":{"product":{"sku":"a-1"}}}'),
        encoding: 'identity',
        identityLength: 34,
        contentType: 'application/graphql-response+json; charset=utf-8',
        headers: [
          ['x-origin', 'one'],
          ['x-origin', 'two'],
          ['content-language', 'de-CH'],
        ],
        storedAt: 1_700_000_000_123,
        maxAge: 900,
        swr: 300,
        staleIfError: 3600,
      };
      expect(await storeAfterMiss('query-1', ['Product:a-1'], response)).toBe(true);
      const { entry } = await store.lookup('query-1');
      expect(entry).toEqual(response);
      expect(await isCached('query-2')).toBe(false);
    });

    it('returns an entry stored compressed exactly: its bytes, encoding and identity length', async () => {
      const identity = Buffer.from(JSON.stringify({ data: { items: Array.from({ length: 200 }, (_, id) => ({ id, name: `item ${id}` })) } }));
      const compressed = await compressBody(identity, { encoding: 'gzip', minBytes: 0 });
      const response: CachedResponse = { ...jsonResponse('x'), ...compressed, identityLength: identity.length };
      expect(compressed.encoding).toBe('gzip');
      expect(await storeAfterMiss('compressed', ['T:1'], response)).toBe(true);
      const { entry } = await store.lookup('compressed');
      expect(entry).toEqual(response);
      expect(decompressBody(entry!.body, entry!.encoding).equals(identity)).toBe(true);
    });

    it('replaces an entry stored again under the same key', async () => {
      expect(await storeAfterMiss('query', ['Product:1'], jsonResponse('first'))).toBe(true);
      const { mark } = await store.lookup('query');
      expect(await store.store('query', jsonResponse('second'), { tags: ['Product:2'], ttlSeconds: 60, mark })).toBe(true);
      expect(bodyText(await store.lookup('query'))).toBe('second');
      expect(await store.invalidate(['Product:2'])).toBe(1);
    });

    it('declines an entry with no lifetime', async () => {
      const { mark } = await store.lookup('query');
      expect(await store.store('query', jsonResponse('x'), { tags: [], ttlSeconds: 0, mark })).toBe(false);
      expect(await isCached('query')).toBe(false);
    });

    it('forgets entries when their lifetime ends', async () => {
      // As the engine stores it, the entry is fresh no longer than its lifetime: a replica-local
      // cache serves a record while it is fresh, and learns of Redis's expiry only when Redis's
      // active expiry cycle finds the key, which a busy Redis may not do within the test's wait.
      expect(await storeAfterMiss('short', ['Product:1'], { ...jsonResponse('short'), maxAge: 1 }, 1)).toBe(true);
      expect(await storeAfterMiss('long', ['Product:1'], jsonResponse('long'), 60)).toBe(true);
      expect(await isCached('short')).toBe(true);

      await sleep(1200);

      expect(await isCached('short')).toBe(false);
      expect(await isCached('long')).toBe(true);
      expect(await store.invalidate(['Product:1'])).toBe(1);
    });

    it('returns an entry past its maxAge until its lifetime ends: the engine judges freshness (swr, staleIfError)', async () => {
      const expired: CachedResponse = { ...jsonResponse('expired'), storedAt: Date.now() - 5_000, maxAge: 1 };
      expect(await storeAfterMiss('expired', ['Product:1'], expired, 60)).toBe(true);
      expect((await store.lookup('expired')).entry).toEqual(expired);
    });

    it('invalidates exactly the entries holding a tag and counts each entry once', async () => {
      await storeAfterMiss('products', ['Product', 'Product:1', 'Product:2', 'Query.products']);
      await storeAfterMiss('product-1', ['Product', 'Product:1', 'Query.product']);
      await storeAfterMiss('user', ['User', 'User:7', 'Query.me']);

      expect(await store.invalidate(['Product:2', 'Query.products', 'Product'])).toBe(2);
      expect(await isCached('products')).toBe(false);
      expect(await isCached('product-1')).toBe(false);
      expect(await isCached('user')).toBe(true);

      expect(await store.invalidate(['Product:1'])).toBe(0);
      expect(await store.invalidate(['Never:seen'])).toBe(0);
      expect(await store.invalidate([])).toBe(0);
      expect(await store.invalidate(['User:7'])).toBe(1);
      expect(await isCached('user')).toBe(false);
    });

    it('invalidates a tag shared by many entries, wherever they are stored', async () => {
      const keys = Array.from({ length: 80 }, (_, index) => `list-${index}`);
      await Promise.all(keys.map((key, index) => storeAfterMiss(key, ['Product', `Product:${index}`])));
      await storeAfterMiss('other', ['User']);
      expect(await store.invalidate(['Product'])).toBe(keys.length);
      const stillCached = await Promise.all(keys.map(isCached));
      expect(stillCached.filter(Boolean)).toEqual([]);
      expect(await isCached('other')).toBe(true);
    });

    it('invalidates everything at once', async () => {
      await storeAfterMiss('a', ['A']);
      await storeAfterMiss('b', ['B']);
      await storeAfterMiss('c', []);
      expect(await store.invalidateAll()).toBe(3);
      expect(await isCached('a')).toBe(false);
      expect(await isCached('c')).toBe(false);
      expect(await store.invalidateAll()).toBe(0);
      expect(await storeAfterMiss('a', ['A'])).toBe(true);
      expect(await isCached('a')).toBe(true);
    });

    describe('race guard', () => {
      it('refuses a response fetched before its tag was invalidated', async () => {
        const missed = await store.lookup('product-1');
        await store.invalidate(['Product:1']);
        const stored = await store.store('product-1', jsonResponse('stale'), {
          tags: ['Query.product', 'Product:1'],
          ttlSeconds: 60,
          mark: missed.mark,
        });
        expect(stored).toBe(false);
        expect(await isCached('product-1')).toBe(false);

        const fetchedAfter = await store.lookup('product-1');
        expect(
          await store.store('product-1', jsonResponse('fresh'), { tags: ['Product:1'], ttlSeconds: 60, mark: fetchedAfter.mark }),
        ).toBe(true);
        expect(bodyText(await store.lookup('product-1'))).toBe('fresh');
      });

      it('is not blocked by the invalidation of an unrelated tag', async () => {
        const missed = await store.lookup('product-1');
        await store.invalidate(['Product:2', 'User']);
        expect(
          await store.store('product-1', jsonResponse('fresh'), { tags: ['Product:1'], ttlSeconds: 60, mark: missed.mark }),
        ).toBe(true);
        expect(await isCached('product-1')).toBe(true);
      });

      it('refuses a response fetched before everything was invalidated', async () => {
        const missed = await store.lookup('product-1');
        await store.invalidateAll();
        expect(
          await store.store('product-1', jsonResponse('stale'), { tags: ['Product:1'], ttlSeconds: 60, mark: missed.mark }),
        ).toBe(false);
        expect(await isCached('product-1')).toBe(false);
      });

      it('lets concurrent misses of unrelated keys store while one tag is invalidated', async () => {
        const keys = Array.from({ length: 20 }, (_, index) => `key-${index}`);
        const misses = await Promise.all(keys.map((key) => store.lookup(key)));
        await store.invalidate(['Product:3']);
        const stored = await Promise.all(
          keys.map((key, index) =>
            store.store(key, jsonResponse(key), { tags: [`Product:${index}`], ttlSeconds: 60, mark: misses[index]!.mark }),
          ),
        );
        expect(stored).toEqual(keys.map((_, index) => index !== 3));
      });
    });

    describe('soft purge', () => {
      /** Fresh for 30 s, then served stale for 60 s more: kept 90 s, as the engine stores it. */
      function swrResponse(text: string, swr = 60): CachedResponse {
        return { ...jsonResponse(text), maxAge: 30, swr };
      }

      async function storeWithSwr(key: string, tags: readonly string[], swr = 60): Promise<CachedResponse> {
        const response = swrResponse(key, swr);
        expect(await storeAfterMiss(key, tags, response, 30 + swr)).toBe(true);
        return response;
      }

      /** Whole seconds since stored, as the `age` of a HIT reads. */
      function ageOf(entry: CachedResponse | undefined): number {
        return Math.floor((Date.now() - entry!.storedAt) / 1000);
      }

      it('marks exactly the entries holding a tag stale, as if their max-age had just run out', async () => {
        const kept = await storeWithSwr('products', ['Product', 'Product:1']);
        await storeWithSwr('product-1', ['Product:1']);
        await storeWithSwr('user', ['User:7']);

        expect(await store.markStale(['Product:1', 'Never:seen'])).toBe(2);
        const { entry } = await store.lookup('products');
        expect(entry).toEqual({ ...kept, storedAt: entry!.storedAt });
        expect(ageOf(entry)).toBeGreaterThan(30);
        expect(ageOf((await store.lookup('product-1')).entry)).toBeGreaterThan(30);
        expect(ageOf((await store.lookup('user')).entry)).toBeLessThan(30);
        // Already stale: a second soft purge leaves them as they are.
        expect(await store.markStale(['Product'])).toBe(0);
        expect(await store.markStale([])).toBe(0);
      });

      it('keeps a stale entry for its swr window from the purge (less the margin), then forgets it', async () => {
        await storeWithSwr('short-swr', ['Product:1'], 2);
        await storeWithSwr('no-swr', ['Product:1'], 0);
        expect(await store.markStale(['Product:1'])).toBe(2);
        expect(await isCached('no-swr')).toBe(false);
        expect(await isCached('short-swr')).toBe(true);
        await sleep(1200);
        expect(await isCached('short-swr')).toBe(false);
      });

      it('marks every entry stale at once', async () => {
        await storeWithSwr('a', ['A']);
        await storeWithSwr('b', []);
        await storeWithSwr('gone', ['C'], 0);
        expect(await store.markAllStale()).toBe(3);
        expect(ageOf((await store.lookup('a')).entry)).toBeGreaterThan(30);
        expect(ageOf((await store.lookup('b')).entry)).toBeGreaterThan(30);
        expect(await isCached('gone')).toBe(false);
        expect(await store.markAllStale()).toBe(0);
      });

      it('marks a tag shared by many entries, wherever they are stored', async () => {
        const keys = Array.from({ length: 80 }, (_, index) => `list-${index}`);
        await Promise.all(keys.map((key) => storeWithSwr(key, ['Product'])));
        expect(await store.markStale(['Product'])).toBe(keys.length);
        const ages = await Promise.all(keys.map(async (key) => ageOf((await store.lookup(key)).entry)));
        expect(ages.filter((age) => age <= 30)).toEqual([]);
      });

      it('purges thousands of tags in one call, soft and then hard', async () => {
        const tags = Array.from({ length: 9000 }, (_, index) => `Todo:${index}`);
        await storeWithSwr('todo-0', ['Todo:0']);
        await storeWithSwr('todo-8999', ['Todo:8999', 'Todo']);
        await storeWithSwr('user', ['User:7']);
        const fetchedBefore = await store.lookup('todo-8500');

        expect(await store.markStale(tags)).toBe(2);
        expect(ageOf((await store.lookup('todo-0')).entry)).toBeGreaterThan(30);
        expect(ageOf((await store.lookup('todo-8999')).entry)).toBeGreaterThan(30);
        expect(ageOf((await store.lookup('user')).entry)).toBeLessThan(30);
        expect(await store.store('todo-8500', swrResponse('before'), { tags: ['Todo:8500'], ttlSeconds: 90, mark: fetchedBefore.mark })).toBe(false);

        expect(await store.invalidate(tags)).toBe(2);
        expect(await isCached('todo-0')).toBe(false);
        expect(await isCached('todo-8999')).toBe(false);
        expect(await isCached('user')).toBe(true);
      });

      it('refuses a response fetched before the soft purge, and stores one fetched after it', async () => {
        await storeWithSwr('product-1', ['Product:1']);
        const fetchedBefore = await store.lookup('product-1');
        const fetchedBeforeAll = await store.lookup('product-2');
        await store.markStale(['Product:1']);
        const options = { tags: ['Product:1'], ttlSeconds: 90 };
        expect(await store.store('product-1', swrResponse('before'), { ...options, mark: fetchedBefore.mark })).toBe(false);
        expect(ageOf((await store.lookup('product-1')).entry)).toBeGreaterThan(30);

        const fetchedAfter = await store.lookup('product-1');
        expect(await store.store('product-1', swrResponse('after'), { ...options, mark: fetchedAfter.mark })).toBe(true);
        expect(bodyText(await store.lookup('product-1'))).toBe('after');

        await store.markAllStale();
        expect(await store.store('product-2', swrResponse('before'), { tags: ['Product:2'], ttlSeconds: 90, mark: fetchedBeforeAll.mark })).toBe(
          false,
        );
      });
    });

    describe('payloads', () => {
      it('round-trips an entry of several megabytes', async () => {
        const body = randomBytes(6 * 1024 * 1024);
        expect(await storeAfterMiss('large', ['Report:1'], { ...jsonResponse('large'), body, identityLength: body.length })).toBe(true);
        const { entry } = await store.lookup('large');
        expect(entry?.body.equals(body)).toBe(true);
      });

      it('round-trips binary bodies, empty bodies and non-ASCII text byte for byte', async () => {
        const binary = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, byte) => byte)), Buffer.from([0xc3, 0x28, 0xff, 0xfe, 0x00])]);
        const unicode: CachedResponse = {
          ...jsonResponse('unicode'),
          body: Buffer.from('{"data":{"name":"Zoë ✓ 日本 🚀"}}'),
          identityLength: Buffer.byteLength('{"data":{"name":"Zoë ✓ 日本 🚀"}}'),
          headers: [['content-disposition', 'inline; filename*=UTF-8\'\'r%C3%A9sum%C3%A9']],
        };
        await storeAfterMiss('binary', ['A'], { ...jsonResponse('binary'), body: binary, identityLength: binary.length, contentType: 'application/octet-stream' });
        await storeAfterMiss('empty', ['A'], { ...jsonResponse('empty'), body: Buffer.alloc(0), identityLength: 0, headers: [] });
        await storeAfterMiss('unicode', ['A'], unicode);
        expect((await store.lookup('binary')).entry?.body.equals(binary)).toBe(true);
        expect((await store.lookup('empty')).entry?.body.length).toBe(0);
        expect((await store.lookup('unicode')).entry).toEqual(unicode);
      });

      it('handles an entry holding thousands of tags, including odd ones', async () => {
        const oddTags = ['Product:{"sku":"a b"}', 'Type:with:colons', 'emoji:🚀', 'percent:%s*?[]{}'];
        const tags = [...Array.from({ length: 3000 }, (_, index) => `Product:${index}`), ...oddTags];
        expect(await storeAfterMiss('everything', tags)).toBe(true);
        expect(await storeAfterMiss('some', ['Product:1', 'Product:2999'])).toBe(true);
        expect(await store.invalidate(['Product:2999'])).toBe(2);
        expect(await storeAfterMiss('everything', tags)).toBe(true);
        expect(await store.invalidate(['percent:%s*?[]{}'])).toBe(1);
        expect(await isCached('everything')).toBe(false);
      });

      it('accepts cache keys of any length and character', async () => {
        const longKey = `PUBLIC|${'{ products { id name } }'.repeat(2000)}`;
        const oddKey = 'scope:{x}|query:"q"\n\u0000🚀';
        await storeAfterMiss(longKey, ['A'], jsonResponse('long'));
        await storeAfterMiss(oddKey, ['A'], jsonResponse('odd'));
        expect(bodyText(await store.lookup(longKey))).toBe('long');
        expect(bodyText(await store.lookup(oddKey))).toBe('odd');
      });
    });

    it('answers ping', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });
  });
}

export function jsonResponse(text: string): CachedResponse {
  return {
    body: Buffer.from(text),
    encoding: 'identity',
    identityLength: Buffer.byteLength(text),
    contentType: 'application/json',
    headers: [['x-served-by', 'origin']],
    storedAt: Date.now(),
    maxAge: 60,
    swr: 0,
    staleIfError: 0,
  };
}

export function bodyText(lookup: Lookup): string | undefined {
  return lookup.entry?.body.toString();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Redis stores answer once connected; this waits for that instead of a fixed sleep. */
export async function untilReady(store: CacheStore, timeoutMs = 10_000): Promise<CacheStore> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await store.ping();
      return store;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(50);
    }
  }
}
