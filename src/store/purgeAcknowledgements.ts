import { deferred } from '../util/index.js';

/**
 * The purging replica's side of a barrier (src/store/redisLocalCache.ts): it publishes
 * `<replicaId>:<n>` to every local cache, Redis answers how many subscribers received it and which
 * replicas are registered as serving, and the barrier holds once as many distinct replicas, every
 * registered one among them, acknowledged `<n>` (an acknowledgement is
 * `<n>:<acknowledgingReplicaId>`). A registered replica that did not receive it (Redis dropped its
 * subscriber, which it has not noticed yet) never acknowledges: the purge then fails rather than
 * answer while that replica may still serve what it purged. Counting replicas, not messages, matters: ioredis sends a
 * command again after a reconnection when its reply was lost, so a barrier or an acknowledgement
 * may arrive twice, and two acknowledgements from one replica must not stand in for a slow one.
 * Acknowledgements may arrive before PUBLISH's own reply (they come on another connection), so
 * they are counted from the start.
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
  async collect(subscribed: Promise<void>, publish: (payload: string) => Promise<BarrierReceivers>): Promise<void> {
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
      const receivers = await Promise.race([publish(`${this.replicaId}:${id}`), barrier.done.then(() => NO_RECEIVERS)]);
      barrier.expect(receivers);
      await barrier.done;
    } finally {
      clearTimeout(timer);
      this.pending.delete(id);
    }
  }

  /** Replica `replicaId` acknowledged barrier `<n>`. */
  acknowledged(id: string, replicaId: string): void {
    this.pending.get(id)?.acknowledge(replicaId);
  }

  /** Acknowledgements in flight are lost (this replica's subscriber connection went away, or it closes). */
  abandonAll(reason: string): void {
    for (const barrier of this.pending.values()) barrier.fail(new Error(`purge not acknowledged: ${reason}`));
  }
}

/**
 * Who must acknowledge a barrier: how many subscribers received it, and the replicas registered as
 * serving; the registry is not trusted while younger than one registration (Redis lost its data).
 */
export interface BarrierReceivers {
  subscribers: number;
  registered: readonly string[];
  registryTrusted: boolean;
}

const NO_RECEIVERS: BarrierReceivers = { subscribers: 0, registered: [], registryTrusted: true };

class PendingBarrier {
  private readonly settling = deferred();
  readonly done = this.settling.promise;
  private readonly received = new Set<string>();
  private expected = Number.POSITIVE_INFINITY;
  private registered: readonly string[] = [];

  constructor() {
    // Failing before anyone awaits `done` (a timeout while PUBLISH is still out) is reported by collect().
    this.done.catch(() => undefined);
  }

  acknowledge(replicaId: string): void {
    this.received.add(replicaId);
    this.resolveWhenComplete();
  }

  expect(receivers: BarrierReceivers): void {
    if (!receivers.registryTrusted) {
      this.fail(new Error(UNTRUSTED_REGISTRY));
      return;
    }
    this.expected = receivers.subscribers;
    this.registered = receivers.registered;
    this.resolveWhenComplete();
  }

  private resolveWhenComplete(): void {
    if (this.received.size >= this.expected && this.registered.every((replicaId) => this.received.has(replicaId))) this.settling.resolve();
  }

  fail(error: Error): void {
    this.settling.reject(error);
  }

  progress(): string {
    const expected = Number.isFinite(this.expected) ? String(this.expected) : 'an unknown number (no PUBLISH reply yet)';
    const silent = this.registered.filter((replicaId) => !this.received.has(replicaId));
    return `${this.received.size} of ${expected} acknowledged${silent.length === 0 ? '' : `; registered and silent: ${silent.join(', ')}`}`;
  }
}

const UNTRUSTED_REGISTRY =
  'purge not acknowledged: the registry of replicas serving from a local cache is younger than one registration (Redis lost its data: a restart, a flush, a failover), so a replica that has not run since may still serve';
