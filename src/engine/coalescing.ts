import { deferred } from '../util/index.js';

/**
 * Request coalescing: while one request (the leader) fetches a missing entry from the origin,
 * identical requests (same cache key, so never across scope buckets) wait for it instead of
 * stampeding the origin, then read the entry it stored. Waits are bounded, and a leader that never
 * reports back (a client that went away mid-request) is forgotten after a while.
 */
export class MissCoalescer {
  private readonly leaders = new Map<string, Leader>();

  constructor(
    private readonly leaderTimeoutMs = 30_000,
    /** Past this many fetches in flight, further misses simply go to the origin uncoalesced. */
    private readonly maxLeaders = 100_000,
  ) {}

  /** Claims the fetch of `key`; undefined when another request already leads it (or too many do). */
  lead(key: string): Leadership | undefined {
    if (this.leaders.has(key) || this.leaders.size >= this.maxLeaders) return undefined;
    const leader = new Leader();
    this.leaders.set(key, leader);
    const release = (): void => {
      if (leader.done) return;
      leader.finish();
      clearTimeout(forget);
      if (this.leaders.get(key) === leader) this.leaders.delete(key);
    };
    const forget = setTimeout(release, this.leaderTimeoutMs);
    forget.unref();
    return { release };
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
  private readonly finishing = deferred();
  readonly finished = this.finishing.promise;

  get done(): boolean {
    return this.finishing.settled;
  }

  finish(): void {
    this.finishing.resolve();
  }
}
