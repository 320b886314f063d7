/**
 * Invalidations after mutations that the store could not apply (Redis stalled, failing over, out of
 * reach), retried until it can: the mutation ran at the origin, so until then the entries it
 * changed are stale, and nothing else would remove them before they expire (README, Invalidation
 * after mutations). Pending tags are merged into one retry; past MAX_PENDING_TAGS the retry
 * empties the whole store instead, which covers them all, so what a client can make this hold is
 * bounded.
 */
export class PendingInvalidations {
  private tags = new Set<string>();
  private everything = false;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private failures = 0;
  /** The connection was made again while a retry ran: one that fails is tried again at once. */
  private retryAtOnce = false;

  constructor(
    private readonly apply: (what: readonly string[] | 'everything') => Promise<void>,
    private readonly onRetryFailed: (error: unknown, failures: number) => void,
  ) {}

  /** Tags (or everything) are waiting for a retry, or one is running. */
  get pending(): boolean {
    return this.waiting || this.running;
  }

  private get waiting(): boolean {
    return this.everything || this.tags.size > 0;
  }

  /** Tags to invalidate again, or everything (the retry then empties the store). */
  add(what: readonly string[] | 'everything'): void {
    if (what === 'everything') this.coverEverything();
    else if (!this.everything) {
      for (const tag of what) this.tags.add(tag);
      if (this.tags.size > MAX_PENDING_TAGS) this.coverEverything();
    }
    this.schedule();
  }

  /**
   * Retries what is waiting now, its backoff forgotten: the store's connection was made again, and a
   * Redis restored from a snapshot serves the entries a waiting invalidation names until it applies
   * (README, Invalidation after mutations).
   */
  retryNow(): void {
    this.failures = 0;
    if (this.running) this.retryAtOnce = true;
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    void this.retry();
  }

  private coverEverything(): void {
    this.everything = true;
    this.tags = new Set();
  }

  private schedule(): void {
    if (this.timer !== undefined || this.running || !this.waiting) return;
    const delay = this.retryAtOnce ? 0 : Math.min(FIRST_DELAY_MS * 2 ** this.failures, MAX_DELAY_MS);
    this.retryAtOnce = false;
    this.timer = setTimeout(() => void this.retry(), delay);
    this.timer.unref();
  }

  private async retry(): Promise<void> {
    this.timer = undefined;
    this.running = true;
    const [tags, everything] = [this.tags, this.everything];
    this.tags = new Set();
    this.everything = false;
    try {
      await this.apply(everything ? 'everything' : [...tags]);
      this.failures = 0;
      this.retryAtOnce = false;
    } catch (error) {
      this.failures += 1;
      // Back in line, merged with what failed since.
      if (everything) this.coverEverything();
      else if (!this.everything) this.add([...tags]);
      this.onRetryFailed(error, this.failures);
    } finally {
      this.running = false;
      this.schedule();
    }
  }
}

/** A retry follows a failure after 100 ms, then twice as long each time, at most every 5 s. */
const FIRST_DELAY_MS = 100;
const MAX_DELAY_MS = 5_000;
/** Tags of failed invalidations kept apart; more, and the retry empties the store. */
const MAX_PENDING_TAGS = 10_000;
