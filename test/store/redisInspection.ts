import type { Redis } from 'ioredis';
import type { CacheStore } from '../../src/store/index.js';
import type { RedisKeyLayout } from '../../src/store/redisLayout.js';

/** SCAN of a test's own server, to prove what the store left behind (the store itself never scans). */
export async function scanKeys(client: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

/** `count` cache keys that hash to the same virtual shard, so a test can watch one shard's indexes. */
export function keysInSameShard(layout: RedisKeyLayout, count: number): string[] {
  const byShard = new Map<number, string[]>();
  for (let candidate = 0; ; candidate += 1) {
    const key = `query-${candidate}`;
    const { shard } = layout.locate(key);
    const keys = [...(byShard.get(shard) ?? []), key];
    if (keys.length === count) return keys;
    byShard.set(shard, keys);
  }
}

let trimWaits = 0;

/**
 * Resolves once the index trims of `store`'s stores so far are done: each is written in the turn
 * after its store's answer, and Redis answers one connection's commands in order. A trim that
 * finds its script not yet loaded on the server is sent again (EVAL) once that reply is in, within
 * the next turn: hence a second round.
 */
export async function afterTrims(store: CacheStore): Promise<void> {
  for (let round = 0; round < 2; round += 1) {
    await new Promise((resolve) => setImmediate(resolve));
    trimWaits += 1;
    await store.lookup(`after-trims-${trimWaits}`);
  }
}
