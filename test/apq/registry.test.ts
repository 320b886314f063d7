import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryPersistedQueryRegistry, REGISTRATION_OVERHEAD_BYTES, type PersistedQueryRegistry } from '../../src/apq/index.js';
import { createStores, type CacheStore } from '../../src/store/index.js';
import { redisServerForTests } from '../support/redisForTests.js';
import { sleep, untilReady } from '../store/contract.js';
import { scanKeys } from '../store/redisInspection.js';

/**
 * What every persisted-query registry does, in memory and on a real Redis: answer what was
 * registered, forget it when its lifetime ends, and stay under its byte bound however much is
 * registered, the oldest registrations going first. The bound is the configuration's
 * `apq.maxBytes`, which a reload may change: the registry follows it from the next registration.
 */

const BOUND = 10_000;
/** A registration counted as about 1000 bytes (its hash, its query, REGISTRATION_OVERHEAD_BYTES): ten fit in BOUND, not eleven. */
function registration(index: number): { hash: string; query: string } {
  const query = `query Q${index} { a } #${'x'.repeat(920)}`.slice(0, 936 - REGISTRATION_OVERHEAD_BYTES);
  return { hash: createHash('sha256').update(query).digest('hex'), query };
}

interface Opened {
  registry: PersistedQueryRegistry;
  close(): Promise<void>;
}

async function registerAll(registry: PersistedQueryRegistry, indexes: readonly number[]): Promise<void> {
  for (const index of indexes) await registry.register(registration(index).hash, registration(index).query, 3600);
}

/** Which of registrations 0 to 39 the registry answers. */
async function heldRegistrations(registry: PersistedQueryRegistry): Promise<number[]> {
  const held: number[] = [];
  for (let index = 0; index < 40; index += 1) {
    if ((await registry.get(registration(index).hash)) !== undefined) held.push(index);
  }
  return held;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, offset) => from + offset);
}

function describeRegistryContract(name: string, open: (maxBytes: () => number) => Promise<Opened>): void {
  describe(`PersistedQueryRegistry contract: ${name}`, () => {
    let opened: Opened;
    /** The configuration's apq.maxBytes, as a reload would change it. */
    let bound: number;
    beforeEach(async () => {
      bound = BOUND;
      opened = await open(() => bound);
    });
    afterEach(async () => {
      await opened.close();
    });

    it('answers a registered hash and nothing else', async () => {
      const { registry } = opened;
      expect(await registry.get('c'.repeat(64))).toBeUndefined();
      await registry.register('c'.repeat(64), 'query Q { a }', 3600);
      expect(await registry.get('c'.repeat(64))).toBe('query Q { a }');
      expect(await registry.get('d'.repeat(64))).toBeUndefined();
    });

    it('forgets a query when its lifetime ends', async () => {
      const { registry } = opened;
      await registry.register('a'.repeat(64), '{ short }', 1);
      await registry.register('b'.repeat(64), '{ long }', 60);
      expect(await registry.get('a'.repeat(64))).toBe('{ short }');
      await sleep(1200);
      expect(await registry.get('a'.repeat(64))).toBeUndefined();
      expect(await registry.get('b'.repeat(64))).toBe('{ long }');
    });

    it('stays under its bound when registered far more than it holds, the oldest going first', async () => {
      const { registry } = opened;
      for (let index = 0; index < 200; index += 1) {
        const { hash, query } = registration(index);
        await registry.register(hash, query, 3600);
      }
      const held: number[] = [];
      for (let index = 0; index < 200; index += 1) {
        if ((await registry.get(registration(index).hash)) !== undefined) held.push(index);
      }
      expect(held).toEqual(Array.from({ length: 10 }, (_, offset) => 190 + offset));
    });

    it('counts a query registered again once, as the newest', async () => {
      const { registry } = opened;
      for (let index = 0; index < 10; index += 1) await registry.register(registration(index).hash, registration(index).query, 3600);
      for (let again = 0; again < 50; again += 1) await registry.register(registration(0).hash, registration(0).query, 3600);
      await registry.register(registration(10).hash, registration(10).query, 3600);
      expect(await registry.get(registration(0).hash)).toBe(registration(0).query);
      expect(await registry.get(registration(1).hash)).toBeUndefined();
      expect(await registry.get(registration(2).hash)).toBe(registration(2).query);
      expect(await registry.get(registration(10).hash)).toBe(registration(10).query);
    });

    it('holds more from the next registration once its bound is raised', async () => {
      await registerAll(opened.registry, range(0, 19));
      bound = 2 * BOUND;
      await registerAll(opened.registry, range(20, 29));
      expect(await heldRegistrations(opened.registry)).toEqual(range(10, 29));
    });

    it('drops the oldest down to a lowered bound at the next registration', async () => {
      await registerAll(opened.registry, range(0, 9));
      bound = BOUND / 2;
      await registerAll(opened.registry, [10]);
      expect(await heldRegistrations(opened.registry)).toEqual(range(6, 10));
    });

    it('keeps each registration until its own expiry when the bound changes', async () => {
      const { registry } = opened;
      await registry.register('a'.repeat(64), '{ short }', 1);
      await registry.register('b'.repeat(64), '{ long }', 60);
      bound = 2 * BOUND;
      await registry.register('c'.repeat(64), '{ later }', 60);
      expect(await registry.get('a'.repeat(64))).toBe('{ short }');
      await sleep(1200);
      expect(await registry.get('a'.repeat(64))).toBeUndefined();
      expect(await registry.get('b'.repeat(64))).toBe('{ long }');
    });

    it('keeps no query larger than the whole bound, and loses nothing for it', async () => {
      const { registry } = opened;
      await registry.register(registration(0).hash, registration(0).query, 3600);
      await registry.register('f'.repeat(64), `{ a } #${'x'.repeat(BOUND)}`, 3600);
      expect(await registry.get('f'.repeat(64))).toBeUndefined();
      expect(await registry.get(registration(0).hash)).toBe(registration(0).query);
    });
  });
}

describeRegistryContract('memory', async (maxBytes) => ({
  registry: new MemoryPersistedQueryRegistry({ maxBytes }),
  close: async () => undefined,
}));

describe('the in-memory registry', () => {
  it('counts a text with a character past U+00FF at two bytes a character, as V8 keeps it', async () => {
    const registry = new MemoryPersistedQueryRegistry({ maxBytes: () => BOUND });
    // Each about 1,000 bytes counted by characters: ten would fit, but V8 keeps them in about 1,500.
    const wide = Array.from({ length: 10 }, (_, index) => {
      const query = `query Q${index} { a } #${'€'.repeat(920)}`.slice(0, 936 - REGISTRATION_OVERHEAD_BYTES);
      return { hash: createHash('sha256').update(query).digest('hex'), query };
    });
    for (const { hash, query } of wide) await registry.register(hash, query, 3600);
    const held = [];
    for (const { hash } of wide) held.push((await registry.get(hash)) !== undefined);
    expect(held).toEqual([false, false, false, false, true, true, true, true, true, true]);
  });
});

describe('the Redis registry', () => {
  const redis = redisServerForTests();
  let prefixNumber = 0;
  const stores: CacheStore[] = [];
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.close()));
  });

  async function openRegistry(keyPrefix: string, maxBytes = () => BOUND): Promise<PersistedQueryRegistry> {
    const { cache, persistedQueries } = createStores(
      { url: redis.server.url, keyPrefix, commandTimeoutMs: 1000 },
      { memoryMaxBytes: 0, persistedQueryMaxBytes: maxBytes },
    );
    stores.push(await untilReady(cache));
    return persistedQueries;
  }

  function uniquePrefix(name: string): string {
    prefixNumber += 1;
    return `${name}-${prefixNumber}:`;
  }

  describeRegistryContract('standalone Redis', async (maxBytes) => {
    const registry = await openRegistry(uniquePrefix('contract'), maxBytes);
    return { registry, close: async () => undefined };
  });

  it('holds no more query keys and counted bytes in Redis than its bound', async () => {
    const keyPrefix = uniquePrefix('bound');
    const registry = await openRegistry(keyPrefix);
    for (let index = 0; index < 500; index += 1) {
      await registry.register(registration(index).hash, registration(index).query, 3600);
    }
    const queryKeys = await scanKeys(redis.inspector, `${keyPrefix}{apq}:q:*`);
    expect(queryKeys).toHaveLength(10);
    const bytes = Number(await redis.inspector.get(`${keyPrefix}{apq}:bytes`));
    expect(bytes).toBeLessThanOrEqual(BOUND);
    const stringBytes = await Promise.all(queryKeys.map((key) => redis.inspector.strlen(key)));
    expect(bytes).toBe(stringBytes.reduce((sum, length) => sum + length + 64 + REGISTRATION_OVERHEAD_BYTES, 0));
    expect(await redis.inspector.zcard(`${keyPrefix}{apq}:index`)).toBe(10);
    expect(await redis.inspector.hlen(`${keyPrefix}{apq}:sizes`)).toBe(10);
  });

  it('follows a changed bound in Redis and in what a replica remembers of it', async () => {
    const keyPrefix = uniquePrefix('rebound');
    let bound = BOUND / 2;
    const [registering, reading] = await Promise.all([openRegistry(keyPrefix, () => bound), openRegistry(keyPrefix, () => bound)]);
    await registerAll(registering, range(0, 9));
    expect(Number(await redis.inspector.get(`${keyPrefix}{apq}:bytes`))).toBe(5 * 1000);
    bound = 2 * BOUND;
    await registerAll(registering, range(10, 29));
    expect(Number(await redis.inspector.get(`${keyPrefix}{apq}:bytes`))).toBe(20 * 1000);
    expect(await heldRegistrations(reading)).toEqual(range(10, 29));
    bound = BOUND / 2;
    await registerAll(registering, [30]);
    expect(Number(await redis.inspector.get(`${keyPrefix}{apq}:bytes`))).toBe(5 * 1000);
    expect(await redis.inspector.zcard(`${keyPrefix}{apq}:index`)).toBe(5);
    // The reader remembers the twenty texts it read until it next grows its memory, which then
    // keeps the most recently read under the lowered bound: 26-29 and the one it reads now.
    expect(await reading.get(registration(30).hash)).toBe(registration(30).query);
    await redis.inspector.del(...(await scanKeys(redis.inspector, `${keyPrefix}{apq}:q:*`)));
    expect(await heldRegistrations(reading)).toEqual(range(26, 30));
  });

  it('keeps services with different key prefixes apart', async () => {
    const shop = await openRegistry(uniquePrefix('shop'));
    const blog = await openRegistry(uniquePrefix('blog'));
    await shop.register('a'.repeat(64), '{ shop }', 60);
    expect(await blog.get('a'.repeat(64))).toBeUndefined();
    expect(await shop.get('a'.repeat(64))).toBe('{ shop }');
  });

  it('a replica remembers what it read until the registration expires, so a hash-only HIT makes one round trip', async () => {
    const keyPrefix = uniquePrefix('remembered');
    const [registering, reading] = await Promise.all([openRegistry(keyPrefix), openRegistry(keyPrefix)]);
    await registering.register('e'.repeat(64), '{ e }', 1);
    expect(await reading.get('e'.repeat(64))).toBe('{ e }');
    // Gone from Redis (as the size bound may drop it): the reader still knows the text the hash names.
    await redis.inspector.del(`${keyPrefix}{apq}:q:${'e'.repeat(64)}`);
    expect(await reading.get('e'.repeat(64))).toBe('{ e }');
    expect(await registering.get('e'.repeat(64))).toBeUndefined();
    await sleep(1200);
    expect(await reading.get('e'.repeat(64))).toBeUndefined();
  });

  it('lets every replica see the registrations of the others', async () => {
    const keyPrefix = uniquePrefix('replicas');
    const [first, second] = await Promise.all([openRegistry(keyPrefix), openRegistry(keyPrefix)]);
    await second.register('b'.repeat(64), '{ b }', 60);
    expect(await first.get('b'.repeat(64))).toBe('{ b }');
  });
});
