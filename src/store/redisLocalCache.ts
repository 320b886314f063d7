import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import type { Logger } from '../observability/index.js';
import { deferred, errorMessage } from '../util/index.js';
import { LocalCache } from './localCache.js';
import { PurgeAcknowledgements } from './purgeAcknowledgements.js';
import type { LocalCacheSettings } from './redisConnection.js';
import { SHARD_COUNT, type EntryLocation, type RedisKeyLayout } from './redisLayout.js';
import { DEREGISTER_LOCAL_CACHE, PUBLISH_BARRIER, REGISTER_LOCAL_CACHE, runScriptsUntracked } from './redisScripts.js';
import type { LocalCacheObserver, Lookup } from './types.js';

/**
 * The Redis store's replica-local cache (src/store/localCache.ts), kept exact with Redis
 * server-assisted client-side caching (README, Redis: the replica-local cache):
 *
 * 1. A subscriber connection of its own: on each 'ready' it asks `CLIENT ID`, then subscribes to
 *    Redis's invalidation channel, the purge barrier and its own acknowledgement channel. Then the
 *    command connection turns on `CLIENT TRACKING ON REDIRECT <that id> OPTOUT` (RESP2's redirect
 *    mode; the store's scripts opt out, see runScriptsUntracked),
 *    checked in the same transaction to name this replica's subscriber (a failover or a DNS change
 *    could have put the two connections on different servers, where the id names someone else).
 *    Only once that reply is in does the cache serve.
 * 2. Every close, end or reconnection of either connection drops the cache and disables it at once;
 *    it is set up again when both are back. Reads sent meanwhile are never kept.
 * 3. Redis pushes the keys that changed (or null for a flush): an entry key drops its record, an
 *    epoch key its shard, everything else (sequence keys change with every invalidation) is
 *    nothing to this cache, which serves only fresh entries anyway.
 * 4. Purges publish a barrier after their scripts succeeded. Each replica's subscriber receives it
 *    after the invalidations Redis queued for it before (one connection, in order), and answers on
 *    the purging replica's acknowledgement channel; the purge resolves once every receiver answered,
 *    and every replica registered as serving (step 5) among them.
 * 5. A heartbeat PINGs the subscriber and registers the replica in Redis as serving for
 *    REGISTRATION_MS more (REGISTER_LOCAL_CACHE, by Redis's clock): records are served only while
 *    both answered within LEASE_MS, counted from before each was sent, so the registration outlives
 *    the serving. The subscriber is PINGed more often, a third of `ackTimeoutMs` at most, and
 *    records are served only while it answered within `ackTimeoutMs`: a replica paused or stalled
 *    past that has not acknowledged an invalidation whose mutation was answered anyway
 *    (UnconfirmedInvalidation), and when it runs again it may take a lookup before the push that
 *    waits on its subscriber; its lease has run out by then, so the lookup reads Redis (found by
 *    an outside audit: 3 stale HITs in 26 pauses of 0.56-0.6 s). A registry Redis lost with its
 *    data is not trusted at once (registryTrusted).
 *    A replica Redis dropped the subscriber of, that has not run since to notice (paused, busy),
 *    stays registered and makes purges fail until its lease ran out, rather than answer `true`
 *    while it may still serve. A subscriber silent a heartbeat longer than the lease is reconnected,
 *    so a connection that Redis dropped without this process hearing of it (a network partition)
 *    stops serving within the lease. A replica whose cache goes off takes its registration back.
 */
export class RedisLocalCache {
  private readonly replicaId = randomUUID();
  private readonly cache: LocalCache;
  private readonly subscriber: Redis;
  private readonly acknowledgements: PurgeAcknowledgements;
  private readonly channels: { barrier: string; acknowledgement: string };
  private readonly heartbeat: NodeJS.Timeout;
  private readonly pings: NodeJS.Timeout;
  /** How long after the subscriber last answered records are still served: `ackTimeoutMs`, at most LEASE_MS. */
  private readonly servedSilenceMs: number;
  /** Raised whenever the connection is lost: a setup begun before does not count after. */
  private subscriberEpoch = 0;
  private clientEpoch = 0;
  private subscription: Subscription | undefined;
  private subscribed = deferred();
  private settingUp = false;
  private lastHeardAt = 0;
  private lastRegisteredAt = 0;
  /** When the registry of serving replicas began, as this replica last trusted it (registryTrusted). */
  private registrySince: string | undefined;
  private lastFailure: string | undefined;
  /** Barriers of other replicas received while the command connection was away: [replicaId, n]. */
  private readonly unsentAcknowledgements: Array<[string, string]> = [];

  constructor(
    private readonly client: Redis,
    connectSubscriber: (connectionName: string) => Redis,
    private readonly layout: RedisKeyLayout,
    settings: LocalCacheSettings,
    private readonly logger: Logger,
    private readonly observer: LocalCacheObserver | undefined,
  ) {
    runScriptsUntracked(client);
    this.cache = new LocalCache(settings.maxBytes, SHARD_COUNT);
    this.acknowledgements = new PurgeAcknowledgements(this.replicaId, settings.ackTimeoutMs);
    this.channels = { barrier: layout.barrierChannel(), acknowledgement: layout.acknowledgementChannel(this.replicaId) };
    this.subscriber = connectSubscriber(`${SUBSCRIBER_NAME_PREFIX}${this.replicaId}`);
    for (const event of ['close', 'end', 'reconnecting']) {
      this.subscriber.on(event, () => this.subscriberLost());
      this.client.on(event, () => this.clientLost());
    }
    this.subscriber.on('ready', () => void this.setUp());
    this.client.on('ready', () => {
      this.sendUnsentAcknowledgements();
      void this.setUp();
    });
    this.subscriber.on('messageBuffer', (channel: Buffer, message: unknown) => this.received(channel.toString(), message));
    this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_INTERVAL_MS).unref();
    this.servedSilenceMs = Math.min(LEASE_MS, settings.ackTimeoutMs);
    const pingEveryMs = Math.max(MIN_PING_INTERVAL_MS, Math.min(HEARTBEAT_INTERVAL_MS, this.servedSilenceMs / 3));
    this.pings = setInterval(() => this.pingSubscriber(), pingEveryMs).unref();
  }

  /**
   * A fresh local record's lookup, at once, or `read` (the Redis lookup) noted as in flight, its
   * reply kept when nothing changed meanwhile.
   */
  lookup(entryKey: string, location: EntryLocation, read: () => Promise<Lookup>): Lookup | Promise<Lookup> {
    return this.cache.get(entryKey, location.keyCheck) ?? this.readThrough(entryKey, location, read);
  }

  /** This replica changed `entryKey` itself: its record goes now, as when Redis says so. */
  forget(entryKey: string): void {
    this.cache.invalidate(entryKey);
  }

  /**
   * Resolves once every replica's local cache has seen the invalidations Redis made before this
   * call (src/store/purgeAcknowledgements.ts); rejects when that cannot be confirmed in time. Also
   * while this replica's own cache is disabled: others may have theirs.
   */
  async barrier(): Promise<void> {
    const started = performance.now();
    await this.acknowledgements.collect(this.subscribed.promise, async (payload) => {
      const keys = [this.layout.replicasKey(), this.layout.registrySinceKey()];
      const [subscribers, registered, since, now] = (await PUBLISH_BARRIER.run(this.client, keys, [this.channels.barrier, payload])) as [number, unknown[], unknown, number];
      return { subscribers: Number(subscribers), registered: registered.map(String), registryTrusted: this.registryTrusted(String(since), Number(now)) };
    });
    this.observer?.acknowledged((performance.now() - started) / 1000);
  }

  async close(): Promise<void> {
    clearInterval(this.heartbeat);
    clearInterval(this.pings);
    this.acknowledgements.abandonAll('the store is closing');
    this.disable();
    try {
      await this.subscriber.quit();
    } catch {
      // Unreachable: there is nothing to unsubscribe from.
    } finally {
      this.subscriber.disconnect();
    }
  }

  private async readThrough(entryKey: string, location: EntryLocation, read: () => Promise<Lookup>): Promise<Lookup> {
    const pending = this.cache.beginRead(entryKey, location.shard);
    let reply: Lookup | undefined;
    try {
      reply = await read();
      reply.localCache = 'miss';
      return reply;
    } finally {
      if (pending !== undefined) this.cache.endRead(pending, location.keyCheck, reply);
    }
  }

  /**
   * Step 1: the subscriber once per connection, then tracking once the command connection is ready
   * too. A setup overtaken by a lost connection runs again for the new one.
   */
  private async setUp(): Promise<void> {
    if (this.settingUp || this.subscriber.status !== 'ready') return;
    this.settingUp = true;
    const epochs = this.subscriberEpoch + this.clientEpoch;
    try {
      this.subscription ??= await this.subscribe();
      if (this.subscription !== undefined && !this.cache.isEnabled && this.client.status === 'ready') await this.track(this.subscription);
    } catch (error) {
      this.failed(error);
    } finally {
      this.settingUp = false;
    }
    if (epochs !== this.subscriberEpoch + this.clientEpoch) void this.setUp();
  }

  private async subscribe(): Promise<Subscription | undefined> {
    // A subscription of this connection that was never confirmed (its reply timed out): start over.
    if (this.subscriber.mode === 'subscriber') {
      this.subscriber.disconnect(true);
      return undefined;
    }
    const epoch = this.subscriberEpoch;
    const sentAt = performance.now();
    const id = String(await this.subscriber.client('ID'));
    // A subscriber Redis evicts under maxmemory-clients loses the pushes in its buffer (Redis 7; an
    // older Redis refuses the command, which changes nothing else).
    await this.subscriber.call('CLIENT', 'NO-EVICT', 'ON').catch(() => undefined);
    await this.subscriber.subscribe(TRACKING_CHANNEL, this.channels.barrier, this.channels.acknowledgement);
    if (epoch !== this.subscriberEpoch) return undefined;
    this.heard(sentAt);
    this.subscribed.resolve();
    return { id, epoch };
  }

  private async track(subscription: Subscription): Promise<void> {
    const clientEpoch = this.clientEpoch;
    const replies = await this.client
      .multi()
      .call('CLIENT', 'TRACKING', 'ON', 'REDIRECT', subscription.id, 'OPTOUT')
      .call('CLIENT', 'LIST', 'ID', subscription.id)
      .exec();
    const [tracking, listed] = replies ?? [];
    if (tracking?.[0]) throw tracking[0];
    if (!String(listed?.[1] ?? '').match(/(?:^| )name=(\S*)/)?.[1]?.endsWith(this.replicaId)) {
      await this.client.call('CLIENT', 'TRACKING', 'OFF');
      throw new Error(`client ${subscription.id} on the command connection's server is not this replica's subscriber`);
    }
    if (clientEpoch !== this.clientEpoch || subscription.epoch !== this.subscriberEpoch) return;
    await this.register();
    if (clientEpoch !== this.clientEpoch || subscription.epoch !== this.subscriberEpoch) return;
    this.cache.enable();
    this.lastFailure = undefined;
    this.logger.info({ replicaId: this.replicaId }, 'local cache on: Redis tracks this replica\'s reads');
    this.observer?.localCacheChanged(true);
  }

  private subscriberLost(): void {
    this.subscriberEpoch += 1;
    this.subscription = undefined;
    if (this.subscribed.settled) this.subscribed = deferred();
    this.acknowledgements.abandonAll('the local-cache subscriber connection was lost');
    this.disable();
  }

  private clientLost(): void {
    this.clientEpoch += 1;
    this.disable();
  }

  private disable(): void {
    const wasEnabled = this.cache.isEnabled;
    this.cache.disable();
    if (!wasEnabled) return;
    // Purges need not wait for this replica any more; one it cannot reach Redis for ends with its lease.
    DEREGISTER_LOCAL_CACHE.run(this.client, [this.layout.replicasKey()], [this.replicaId]).catch(() => undefined);
    this.logger.warn({ replicaId: this.replicaId }, 'local cache off until both Redis connections are back');
    this.observer?.localCacheChanged(false);
  }

  private received(channel: string, message: unknown): void {
    if (channel === TRACKING_CHANNEL) this.invalidated(message);
    else if (channel === this.channels.barrier) this.answerBarrier(String(message));
    else if (channel === this.channels.acknowledgement) this.acknowledgementArrived(String(message));
  }

  /** Step 3: RESP2 delivers the keys as an array of bulk strings, or null when the database was flushed. */
  private invalidated(keys: unknown): void {
    if (keys === null) {
      this.cache.clear();
      return;
    }
    if (!Array.isArray(keys)) return;
    for (const key of keys) {
      const name = String(key);
      const shard = this.layout.epochShard(name);
      if (shard === undefined) this.cache.invalidate(name);
      else this.cache.invalidateShard(shard);
    }
  }

  /** Step 4: every invalidation Redis queued for this subscriber before the barrier has been applied above. */
  private answerBarrier(payload: string): void {
    const separator = payload.lastIndexOf(':');
    if (separator <= 0) return;
    const replicaId = payload.slice(0, separator);
    const id = payload.slice(separator + 1);
    if (replicaId === this.replicaId) {
      this.acknowledgements.acknowledged(id, this.replicaId);
      return;
    }
    this.acknowledge(replicaId, id);
  }

  /** `<n>:<acknowledgingReplicaId>` on this replica's acknowledgement channel. */
  private acknowledgementArrived(payload: string): void {
    const separator = payload.indexOf(':');
    if (separator <= 0) return;
    this.acknowledgements.acknowledged(payload.slice(0, separator), payload.slice(separator + 1));
  }

  /**
   * Answers on the command connection; while it is reconnecting (this cache is off and empty then,
   * so acknowledging is true), the answer waits for it, rather than failing the other replica's
   * purge. A failed acknowledgement is the purging replica's timeout to report.
   */
  private acknowledge(replicaId: string, id: string): void {
    if (this.client.status !== 'ready') {
      if (this.unsentAcknowledgements.length >= MAX_UNSENT_ACKNOWLEDGEMENTS) this.unsentAcknowledgements.shift();
      this.unsentAcknowledgements.push([replicaId, id]);
      return;
    }
    this.client.publish(this.layout.acknowledgementChannel(replicaId), `${id}:${this.replicaId}`).catch(() => undefined);
  }

  private sendUnsentAcknowledgements(): void {
    for (const [replicaId, id] of this.unsentAcknowledgements.splice(0)) this.acknowledge(replicaId, id);
  }

  /** Step 5, and a retry of a setup that failed (a timeout, a server not ready yet). */
  private beat(): void {
    if (this.subscription === undefined) {
      void this.setUp();
      return;
    }
    // The lease ran out a heartbeat ago (records are no longer served): the connection had one more chance.
    if (performance.now() - this.lastHeardAt > LEASE_MS + HEARTBEAT_INTERVAL_MS) {
      this.logger.warn({ replicaId: this.replicaId, leaseMs: LEASE_MS }, 'local-cache subscriber silent; reconnecting');
      this.subscriber.disconnect(true);
      return;
    }
    // A subscriber silent for the lease serves no more: its registration would only hold purges back.
    if (this.cache.isEnabled && performance.now() < this.lastHeardAt + LEASE_MS) this.register().catch(() => undefined);
    else if (!this.cache.isEnabled) void this.setUp();
  }

  /** Step 5: the subscriber is alive as long as it answers (heard). */
  private pingSubscriber(): void {
    if (this.subscription === undefined) return;
    const epoch = this.subscriberEpoch;
    const sentAt = performance.now();
    this.subscriber.ping().then(
      () => {
        if (epoch === this.subscriberEpoch) this.heard(sentAt);
      },
      () => undefined,
    );
  }

  /**
   * Whether the registry holds every replica that may serve. Redis loses it with its data (a restart
   * without persistence, a flush, a failover to a replica without it), and one a replica saw start
   * anew may lack a replica that registered before and has not run since (paused, busy), whose
   * subscriber Redis dropped: it is trusted once it is older than a registration. A registry this
   * replica saw from its start is trusted, and one it never saw before, as it started after it.
   */
  private registryTrusted(since: string, nowMs: number): boolean {
    if (this.registrySince === undefined || since === this.registrySince) {
      if (since !== '') this.registrySince = since;
      return true;
    }
    if (since === '' || nowMs - Number(since) < REGISTRATION_MS) return false;
    this.registrySince = since;
    return true;
  }

  /** Step 5: registered as serving for REGISTRATION_MS from when Redis ran it, so past LEASE_MS from `sentAt`. */
  private async register(): Promise<void> {
    const epoch = this.clientEpoch;
    const sentAt = performance.now();
    const since = await REGISTER_LOCAL_CACHE.run(this.client, [this.layout.replicasKey(), this.layout.registrySinceKey()], [this.replicaId, REGISTRATION_MS]);
    this.registrySince ??= String(since);
    if (epoch !== this.clientEpoch) return;
    this.lastRegisteredAt = Math.max(this.lastRegisteredAt, sentAt);
    this.renewLease();
  }

  /** The subscriber was alive at `sentAt` (it answered something sent then). */
  private heard(sentAt: number): void {
    this.lastHeardAt = Math.max(this.lastHeardAt, sentAt);
    this.renewLease();
  }

  /** Records are served until `servedSilenceMs` after the subscriber's last answer, and LEASE_MS after the last registration. */
  private renewLease(): void {
    this.cache.renewLease(Math.min(this.lastHeardAt + this.servedSilenceMs, this.lastRegisteredAt + LEASE_MS));
  }

  /** Logged once per distinct failure: a setup retried every heartbeat must not flood the log. */
  private failed(error: unknown): void {
    const message = errorMessage(error);
    if (message === this.lastFailure) return;
    this.lastFailure = message;
    this.logger.warn({ err: message, replicaId: this.replicaId }, 'local cache not enabled; lookups read Redis');
  }
}

/** Redis's channel of invalidation messages in RESP2 redirect mode. */
const TRACKING_CHANNEL = '__redis__:invalidate';
/** CLIENT LIST names the subscriber connections of svc-cache's local caches so. */
const SUBSCRIBER_NAME_PREFIX = 'svc-cache-local-cache-';
const HEARTBEAT_INTERVAL_MS = 1000;
/** With a very short `ackTimeoutMs` records are seldom served rather than the subscriber pinged without pause. */
const MIN_PING_INTERVAL_MS = 20;
/** Barriers answered once the command connection is back; purges waiting longer have failed anyway. */
const MAX_UNSENT_ACKNOWLEDGEMENTS = 1000;
/**
 * How long after the subscriber last answered records are still served. Redis itself notices a
 * silent peer only after minutes (tcp-keepalive 300 s) and keeps counting it as a receiver of
 * barriers until then, so purges fail (their acknowledgement times out) rather than resolve while
 * this replica may still serve; a few heartbeats absorb event-loop stalls without reconnecting.
 */
const LEASE_MS = 3000;
/**
 * How long a registration lasts by Redis's clock: the lease and a second more, for a registration a
 * failover lost with the last second of replication, and for clocks of Redis hosts that disagree.
 */
const REGISTRATION_MS = LEASE_MS + 1000;

interface Subscription {
  /** The subscriber connection's CLIENT ID. */
  id: string;
  epoch: number;
}
