import { Redis } from 'ioredis';
import { createStore, type CacheStore } from '../src/store/index.js';
import { RedisKeyLayout } from '../src/store/redisLayout.js';
import { percentile, round } from './closedLoop.js';

export interface PurgeAckFigures {
  /** Local caches that received each barrier: the purging store's own and the sidecar children's. */
  replicas: number;
  purges: number;
  /** p50 ms of `invalidate` of one tag, waiting for every local cache's acknowledgement. */
  withLocalCacheP50Ms: number;
  /** The same purge through a store without the local cache: its scripts only. */
  withoutLocalCacheP50Ms: number;
}

/**
 * What a purge now waits for (README, The replica-local cache): `invalidate` of a tag no entry holds
 * (its 16 shard scripts, then the barrier), one at a time, through a store in this process with the
 * local cache, whose barrier the running sidecar children (one with `--only purge-ack`) acknowledge,
 * and through one without it; in alternating rounds, so that both meet the same machine load.
 */
export async function measurePurgeAck(redisUrl: string, keyPrefix: string, signal: AbortSignal): Promise<PurgeAckFigures> {
  const open = (enabled: boolean): Promise<CacheStore> =>
    new Promise((resolve, reject) => {
      const store = createStore(
        { url: redisUrl, keyPrefix, commandTimeoutMs: 1000, localCache: { enabled, maxBytes: 1024 * 1024 } },
        { memoryMaxBytes: 0, localCacheObserver: { localCacheChanged: (on) => on && resolve(store), acknowledged: () => undefined } },
      );
      if (!enabled) store.ping().then(() => resolve(store), reject);
    });
  const stores = { with: await open(true), without: await open(false) };
  const inspector = new Redis(redisUrl);
  try {
    const [, receivers] = (await inspector.pubsub('NUMSUB', new RedisKeyLayout(keyPrefix).barrierChannel())) as [string, number];
    const timings = { with: [] as number[], without: [] as number[] };
    for (let roundNumber = 0; roundNumber <= ROUNDS; roundNumber += 1) {
      for (const kind of ['with', 'without'] as const) {
        for (let purge = 0; purge < PURGES_PER_ROUND; purge += 1) {
          signal.throwIfAborted();
          const started = performance.now();
          await stores[kind].invalidate([PURGED_TAG]);
          // The first round warms the connections and loads the scripts.
          if (roundNumber > 0) timings[kind].push(performance.now() - started);
        }
      }
    }
    const p50 = (values: number[]) => round(percentile(Float64Array.from(values).sort(), 0.5), 3);
    return {
      replicas: Number(receivers),
      purges: timings.with.length,
      withLocalCacheP50Ms: p50(timings.with),
      withoutLocalCacheP50Ms: p50(timings.without),
    };
  } finally {
    inspector.disconnect();
    await Promise.all([stores.with.close(), stores.without.close()]);
  }
}

const ROUNDS = 5;
const PURGES_PER_ROUND = 100;
/** Held by no entry: the purge's cost is its scripts and its barrier, not the entries it drains. */
const PURGED_TAG = 'bench:purge-ack';
