import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { LOCAL_CACHE_DEFAULT_MAX_BYTES, parseRedisNode, parseRedisUrl, type Config, type RedisEndpoint, type RedisNodeAddress } from '../config/index.js';
import type { Logger } from '../observability/index.js';
import type { RedisClient } from './redisScripts.js';
import { errorMessage } from '../util/index.js';

export type RedisConfig = NonNullable<Config['redis']>;

/** Whether `config` names a Redis at all; without one the service runs on the in-memory store. */
export function hasRedisConnection(config: Config['redis'] | undefined): config is RedisConfig {
  return config !== undefined && (config.url !== undefined || config.cluster !== undefined || config.sentinel !== undefined);
}

/**
 * A client for the standalone server, Cluster or Sentinel-managed master that `config` names.
 * Commands never wait for a connection: while Redis is away they fail at once (the engine answers
 * PASS), and the client keeps reconnecting by itself. With `cluster` or `sentinel`, `url` may still
 * be given for the password, user name and TLS (rediss://) that the data nodes require.
 */
export function connectRedis(config: RedisConfig, logger: Logger): RedisClient {
  const client = createClient(config);
  reportConnectionChanges(client, logger, 'commands');
  return client;
}

/**
 * The local cache's subscriber connection to the server (or Sentinel-managed master) `config`
 * names, never a Cluster. It neither resubscribes nor replays commands on its own after a
 * reconnection: src/store/redisLocalCache.ts sets each new connection up itself, in order.
 */
export function connectSubscriber(config: RedisConfig, logger: Logger, connectionName: string): Redis {
  if (config.cluster !== undefined) throw new Error(LOCAL_CACHE_WITH_CLUSTER);
  const subscriber = createStandaloneClient(config, {
    autoResubscribe: false,
    autoResendUnfulfilledCommands: false,
    enableAutoPipelining: false,
    connectionName,
  });
  reportConnectionChanges(subscriber, logger, 'local-cache subscriber');
  return subscriber;
}

export interface LocalCacheSettings {
  maxBytes: number;
  /** How long a purge waits for every local cache's acknowledgement before it fails. */
  ackTimeoutMs: number;
}

/** `redis.localCache` with its defaults, or undefined when it is off (README, Every key). */
export function localCacheSettings(config: RedisConfig): LocalCacheSettings | undefined {
  const enabled = config.localCache?.enabled ?? config.cluster === undefined;
  if (!enabled) return undefined;
  if (config.cluster !== undefined) throw new Error(LOCAL_CACHE_WITH_CLUSTER);
  return {
    maxBytes: config.localCache?.maxBytes ?? LOCAL_CACHE_DEFAULT_MAX_BYTES,
    // A barrier is two Redis hops (its delivery, then each acknowledgement), each allowed
    // commandTimeoutMs; with the default 250 ms that is 500 ms, inside Envoy's 1 s ext_proc
    // message_timeout (deploy/sidecar/envoy.yaml), which a mutation's invalidation must answer within.
    ackTimeoutMs: config.localCache?.ackTimeoutMs ?? 2 * config.commandTimeoutMs,
  };
}

const LOCAL_CACHE_WITH_CLUSTER =
  'redis.localCache is not available with redis.cluster: invalidation tracking and the purge acknowledgement are per node';

function createClient(config: RedisConfig): RedisClient {
  if (config.cluster !== undefined && config.sentinel !== undefined) {
    throw new Error('redis.cluster and redis.sentinel exclude each other: configure one of them');
  }
  if (config.cluster === undefined) return createStandaloneClient(config, {});
  // The Cluster connects to nodes lazily, hands them commands only while they are new or ready,
  // and reconnects as a whole after refreshing its slot map, so its own offline queue is the one
  // to turn off.
  return new Cluster(config.cluster.nodes.map(nodeAddress), {
    redisOptions: commandOptions(config, endpointOf(config)),
    enableOfflineQueue: false,
    clusterRetryStrategy: reconnectDelayMs,
    retryDelayOnFailover: RETRY_DELAY_IN_CLUSTER_MS,
    retryDelayOnClusterDown: RETRY_DELAY_IN_CLUSTER_MS,
    retryDelayOnTryAgain: RETRY_DELAY_IN_CLUSTER_MS,
    slotsRefreshTimeout: Math.max(config.commandTimeoutMs, 1000),
  });
}

function endpointOf(config: RedisConfig): RedisEndpoint | undefined {
  return config.url === undefined ? undefined : redisUrlEndpoint(config.url);
}

function commandOptions(config: RedisConfig, endpoint: RedisEndpoint | undefined): RedisOptions {
  return {
    username: endpoint?.username,
    password: endpoint?.password,
    tls: endpoint?.tls ? {} : undefined,
    commandTimeout: config.commandTimeoutMs,
    // Commands that timed out are not sent again after a reconnection (StalledConnection): their
    // callers have long gone on without them.
    autoResendUnfulfilledCommands: false,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    // Lookups of concurrent HITs leave in one socket write instead of one each: writing the MGET
    // was the largest single cost of a HIT (measured: HIT throughput 0.71-0.74 of the floor
    // without, 0.82-0.94 with). Each command keeps its own reply and timeout. A lookup made while
    // no other waits on Redis is written at once instead (RedisStore's mget).
    enableAutoPipelining: true,
    // Written at once rather than auto-pipelined: scripts (a MISS's store, invalidations, APQ
    // registrations) because an auto-pipelined command waits for the next turn of the event loop,
    // which cost a MISS's store about 35 µs alone (docs/performance.md, What a MISS adds); PUBLISH
    // because an auto-pipelined batch leaves only once the previous one's replies are all in, and a
    // purge's barrier and the other replicas' acknowledgements (src/store/redisLocalCache.ts) must
    // not queue behind lookups.
    autoPipeliningIgnoredCommands: ['evalsha', 'eval', 'publish'],
  };
}

/** A connection to the standalone server or the Sentinel-managed master, with `overrides` of the usual options. */
function createStandaloneClient(config: RedisConfig, overrides: RedisOptions): Redis {
  const endpoint = endpointOf(config);
  const connectionOptions = {
    ...commandOptions(config, endpoint),
    db: endpoint?.db ?? 0,
    enableOfflineQueue: false,
    retryStrategy: reconnectDelayMs,
    ...overrides,
  } satisfies RedisOptions;
  if (config.sentinel !== undefined) {
    return new Redis({
      ...connectionOptions,
      name: config.sentinel.name,
      sentinels: config.sentinel.sentinels.map(nodeAddress),
      sentinelRetryStrategy: reconnectDelayMs,
      enableTLSForSentinelMode: connectionOptions.tls !== undefined,
    });
  }
  if (endpoint === undefined) throw new Error('redis.url, redis.cluster or redis.sentinel is required');
  return new Redis({ ...connectionOptions, host: endpoint.host, port: endpoint.port });
}

const CONNECT_TIMEOUT_MS = 2000;
const MAX_RECONNECT_DELAY_MS = 1000;
const RETRY_DELAY_IN_CLUSTER_MS = 50;

function reconnectDelayMs(attempt: number): number {
  return Math.min(100 * attempt, MAX_RECONNECT_DELAY_MS);
}

/**
 * The schema refuses every address these parsers refuse (src/config/schema.ts), so only a
 * configuration built in code without it gets here with one; the message names the key, never the value.
 */
function redisUrlEndpoint(url: string): RedisEndpoint {
  const endpoint = parseRedisUrl(url);
  if (typeof endpoint === 'string') throw new Error(`redis.url cannot be used: ${endpoint}`);
  return endpoint;
}

function nodeAddress(address: string): RedisNodeAddress {
  const node = parseRedisNode(address);
  if (typeof node === 'string') throw new Error(`a redis.cluster or redis.sentinel address cannot be used: ${node}`);
  return node;
}

/** One line when the connection fails and one when it is back, not one per reconnect attempt. */
function reportConnectionChanges(client: RedisClient, logger: Logger, connection: 'commands' | 'local-cache subscriber'): void {
  let failing = false;
  client.on('ready', () => {
    failing = false;
    logger.info({ connection }, 'redis connected');
  });
  client.on('error', (error: Error) => {
    if (failing) return;
    failing = true;
    logger.warn({ err: errorMessage(error), connection }, 'redis unavailable; requests pass to the origin until it is back');
  });
}

/** Rejects when Redis has not answered within `timeoutMs`, so callers answer PASS instead of waiting. */
export async function withinTimeout<T>(operation: Promise<T>, what: string, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RedisCommandTimeout(`redis ${what} timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([operation, timeout]);
  } catch (error) {
    throw isRefusedOffline(error) ? new RedisNotConnected('redis is not connected', { cause: error }) : error;
  } finally {
    clearTimeout(timer);
  }
}

/** A command refused because no connection was ready (RedisStore adds why the last one ended). */
export class RedisNotConnected extends Error {}

/** A command Redis did not answer within `redis.commandTimeoutMs`. */
export class RedisCommandTimeout extends Error {}

/** Ours (withinTimeout), or ioredis's own (`commandTimeout`), whichever came first. */
export function isCommandTimeout(error: unknown): boolean {
  return error instanceof RedisCommandTimeout || (error instanceof Error && error.message === IOREDIS_COMMAND_TIMEOUT);
}

/** The message of ioredis's error for a command past `commandTimeout` (ioredis's Command.setTimeout). */
const IOREDIS_COMMAND_TIMEOUT = 'Command timed out';

/** Redis's refusal of a write at `maxmemory` under `noeviction` (a script's too, before its first write). */
export function isOutOfMemory(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('OOM ');
}

/**
 * ioredis's refusal of a command sent while no connection is ready (`enableOfflineQueue: false`):
 * "Stream isn't writeable and …", or "Cluster isn't ready and …", words an operator cannot act on.
 */
function isRefusedOffline(error: unknown): boolean {
  return error instanceof Error && error.message.endsWith(IOREDIS_OFFLINE_REFUSAL);
}

const IOREDIS_OFFLINE_REFUSAL = 'and enableOfflineQueue options is false';

/**
 * A connection whose Redis stopped answering without closing it (a stalled process, a network black
 * hole). ioredis keeps every command that timed out in its queue until a reply comes, so each
 * request would leave one there for as long as the stall lasts (an audit measured 1.9 KB a request
 * for 20,000 requests). Once only timeouts have come for `afterMs`, `reconnect` is called: the
 * connection closes, which fails what waits on it, and a new one is made. A reply of any kind, or
 * any other failure (the connection is down: commands fail at once), ends the watch.
 */
export class StalledConnection {
  private timeoutsSince: number | undefined;

  constructor(
    private readonly afterMs: number,
    private readonly reconnect: () => void,
    private readonly now: () => number = performance.now.bind(performance),
  ) {}

  /** The outcome of one command: a timeout, or anything else. */
  settled(timedOut: boolean): void {
    if (!timedOut) {
      this.timeoutsSince = undefined;
      return;
    }
    const at = this.now();
    this.timeoutsSince ??= at;
    if (at - this.timeoutsSince < this.afterMs) return;
    this.timeoutsSince = undefined;
    this.reconnect();
  }
}

/** Only timeouts for 4 command timeouts, and at least 1 s: a healthy Redis answers every command within one. */
export function stalledAfterMs(commandTimeoutMs: number): number {
  return Math.max(4 * commandTimeoutMs, 1000);
}

