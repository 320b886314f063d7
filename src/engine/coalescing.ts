import { LRUCache } from 'lru-cache';

/**
 * Request coalescing: while one request (the leader) fetches a missing entry from the origin,
 * identical requests (same cache key, so never across scope buckets) wait for it instead of
 * stampeding the origin, then read the entry it stored. Waits are bounded, and a leader that never
 * reports back (a client that went away mid-request) is forgotten after a while.
 */
export class MissCoalescer {
  private readonly leaders: LRUCache<string, Leader>;

  constructor(leaderTimeoutMs = 30_000, maxLeaders = 100_000) {
    this.leaders = new LRUCache<string, Leader>({
      max: maxLeaders,
      ttl: leaderTimeoutMs,
      dispose: (leader) => leader.finish(),
    });
  }

  /** Claims the fetch of `key`; undefined when another request already leads it. */
  lead(key: string): Leadership | undefined {
    if (this.leaders.has(key)) return undefined;
    const leader = new Leader();
    this.leaders.set(key, leader);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        if (this.leaders.get(key) === leader) this.leaders.delete(key);
        leader.finish();
      },
    };
  }

  /** Waits up to `waitMs` for the leader of `key`; true when it finished in time (stored or not). */
  async follow(key: string, waitMs: number): Promise<boolean> {
    const leader = this.leaders.get(key);
    if (!leader || waitMs <= 0) return false;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), waitMs);
    });
    try {
      return await Promise.race([leader.finished.then(() => true), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}

export interface Leadership {
  /** The leader is done, whatever came of it; safe to call more than once. */
  release(): void;
}

class Leader {
  readonly finished: Promise<void>;
  finish!: () => void;

  constructor() {
    this.finished = new Promise<void>((resolve) => {
      this.finish = resolve;
    });
  }
}
