/**
 * The purging replica's side of a barrier (src/store/redisLocalCache.ts): it publishes
 * `<replicaId>:<n>` to every local cache, Redis answers how many subscribers received it, and the
 * barrier holds once as many acknowledgements of `<n>` came back. Acknowledgements may arrive
 * before PUBLISH's own reply (they come on another connection), so they are counted from the start.
 */
export class PurgeAcknowledgements {
  private sequence = 0;
  private readonly pending = new Map<string, PendingBarrier>();

  constructor(
    private readonly replicaId: string,
    private readonly timeoutMs: number,
  ) {}

  /**
   * Waits for `subscribed` (acknowledgements published before this replica listens would be lost),
   * publishes the barrier and resolves once every receiver acknowledged it; rejects after
   * `timeoutMs` in all, or when the acknowledgements can no longer arrive (`abandonAll`).
   */
  async collect(subscribed: Promise<void>, publish: (payload: string) => Promise<number>): Promise<void> {
    this.sequence += 1;
    const id = String(this.sequence);
    const barrier = new PendingBarrier();
    this.pending.set(id, barrier);
    const timer = setTimeout(
      () => barrier.fail(new Error(`local caches did not acknowledge the purge within ${this.timeoutMs} ms (${barrier.progress()})`)),
      this.timeoutMs,
    );
    try {
      await Promise.race([subscribed, barrier.done]);
      const receivers = await Promise.race([publish(`${this.replicaId}:${id}`), barrier.done.then(() => 0)]);
      barrier.expect(receivers);
      await barrier.done;
    } finally {
      clearTimeout(timer);
      this.pending.delete(id);
    }
  }

  /** A replica acknowledged barrier `<n>` (the payload of an acknowledgement). */
  acknowledged(id: string): void {
    this.pending.get(id)?.acknowledge();
  }

  /** Acknowledgements in flight are lost (this replica's subscriber connection went away, or it closes). */
  abandonAll(reason: string): void {
    for (const barrier of this.pending.values()) barrier.fail(new Error(`purge not acknowledged: ${reason}`));
  }
}

class PendingBarrier {
  readonly done: Promise<void>;
  private received = 0;
  private expected = Number.POSITIVE_INFINITY;
  private resolve!: () => void;
  private reject!: (error: Error) => void;

  constructor() {
    this.done = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    // Failing before anyone awaits `done` (a timeout while PUBLISH is still out) is reported by collect().
    this.done.catch(() => undefined);
  }

  acknowledge(): void {
    this.received += 1;
    if (this.received >= this.expected) this.resolve();
  }

  expect(receivers: number): void {
    this.expected = receivers;
    if (this.received >= this.expected) this.resolve();
  }

  fail(error: Error): void {
    this.reject(error);
  }

  progress(): string {
    const expected = Number.isFinite(this.expected) ? String(this.expected) : 'an unknown number (no PUBLISH reply yet)';
    return `${this.received} of ${expected} acknowledged`;
  }
}
