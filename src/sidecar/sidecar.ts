import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import type { Config } from '../config/index.js';
import { configWarnings, definitionOf, formatKeyPath, scopeSources, valueAt, watchConfig, withValueAt } from '../config/index.js';
import { Dashboard, dashboardRoutes, type StoreHealth } from '../dashboard/index.js';
import { DecisionEngine, type RequestSummary, type RuntimeState } from '../engine/index.js';
import { MAX_REWRITTEN_PATH_BYTES } from '../extproc/index.js';
import { startExtProcServer, type ExtProcServer } from '../extproc/index.js';
import { withSecretHeaders, type Logger } from '../observability/index.js';
import { MeasuredStore } from './measuredStore.js';
import { Metrics, RepeatedWarning } from '../observability/index.js';
import { warnOmittedPurgeFields } from '../purge/index.js';
import { createSchemaSource } from '../schema/index.js';
import { createStores, type CacheStore } from '../store/index.js';
import { startAdminServer, type AdminServer } from './admin.js';
import { engineActions, invalidationChange, purgeChange } from './dashboardWiring.js';
import { engineEventsRecordedIn } from './engineEvents.js';
import { errorMessage } from '../util/index.js';

export interface SidecarOptions {
  config: Config;
  /** When given, the file is watched and a valid change applies to new requests. */
  configPath?: string;
  /** What `config` was read from (loadConfigSnapshot), so that a change made while starting is applied too. */
  configFingerprint?: string;
  grpcPort: number;
  adminPort: number;
  /** The ext_proc port's address: 127.0.0.1 by default, as Envoy is in the same pod. */
  grpcHost?: string;
  /** The admin port's address: every interface by default, for the kubelet's probes. */
  adminHost?: string;
  /** Both addresses at once (tests and the demo keep everything on loopback). */
  host?: string;
  logger: Logger;
  /**
   * Told what each request came to once its ext_proc stream ends, after `/metrics` has counted it
   * (a dashboard subscribes here). An observer that throws is logged, never felt by the request.
   */
  onRequestCompleted?: (summary: RequestSummary) => void;
  /** How often the store is pinged for `svc_cache_store_up`: 15 s unless a test says otherwise. */
  storePingIntervalMs?: number;
}

export interface Sidecar {
  grpcPort: number;
  adminPort: number;
  engine: DecisionEngine;
  store: CacheStore;
  /** What this sidecar recorded, on a registry of its own; served on the admin port's `/metrics`. */
  metrics: Metrics;
  /** The admin port's page: this replica's traffic, purges and configuration. */
  dashboard: Dashboard;
  /** Resolves once the origin schema is loaded (caching starts then). */
  schemaReady: Promise<void>;
  close(graceMs?: number): Promise<void>;
}

/** `svc-cache serve`: the ext_proc server, its store, schema and config, and the admin port. */
export async function startSidecar(options: SidecarOptions): Promise<Sidecar> {
  const startConfig = options.config;
  let config = startConfig;
  let logSecretHeaders = secretHeaderNames(config);
  const logger = withSecretHeaders(options.logger, () => logSecretHeaders);
  let closing = false;
  const metrics = new Metrics();
  const stores = createStores(config.redis, {
    memoryMaxBytes: config.cache.memoryMaxBytes,
    // Read at each registration, so that a reload applies to the registry too (README, Hot reload).
    persistedQueryMaxBytes: () => config.apq.maxBytes,
    logger,
    localCacheObserver: {
      localCacheChanged: (enabled) => metrics.setLocalCacheEnabled(enabled),
      acknowledged: (seconds) => metrics.observePurgeAcknowledgementSeconds(seconds),
    },
  });
  const store = new MeasuredStore(stores.cache, metrics);
  const schemaSource = createSchemaSource(config, logger, {
    onLoaded: (schema, forConfig, mismatches) => {
      metrics.setConfigSchemaMismatches(mismatches);
      warnOmittedPurgeFields(schema, forConfig.keyFields, logger);
    },
  });
  const state = (): RuntimeState => ({ config, schema: schemaSource.current() });
  const dashboard = new Dashboard({
    config: () => config,
    storeHealth: () => storeHealth(store, metrics),
    coalescedRequests: () => metrics.coalesced,
  });
  const recorded = engineEventsRecordedIn(metrics);
  const engine = new DecisionEngine({
    state,
    store,
    persistedQueries: stores.persistedQueries,
    maxRewrittenPathBytes: MAX_REWRITTEN_PATH_BYTES,
    events: {
      ...recorded,
      purge: (event) => {
        recorded.purge(event);
        const change = purgeChange(event);
        if (change) dashboard.recordChange(change);
      },
      invalidation: (event) => {
        recorded.invalidation(event);
        dashboard.recordChange(invalidationChange(event));
      },
    },
    scopeKeySecret: scopeKeySecret(config, logger),
    logger,
  });
  // Metrics first, then the dashboard (off, it costs a request nothing), then whoever subscribed;
  // each is told of every finished request.
  const requestObservers: Array<(summary: RequestSummary) => void> = [
    (summary) => metrics.recordRequest(summary),
    (summary) => {
      if (config.dashboard.enabled) dashboard.record(summary);
    },
  ];
  if (options.onRequestCompleted) requestObservers.push(options.onRequestCompleted);
  const startExtProc = async (): Promise<ExtProcServer> =>
    startExtProcServer({
      engine,
      logger,
      metrics,
      onRequestCompleted: (summary) => {
        for (const observe of requestObservers) {
          try {
            observe(summary);
          } catch (error) {
            logger.error({ err: errorMessage(error) }, 'a request observer failed');
          }
        }
      },
      port: options.grpcPort,
      host: options.grpcHost ?? options.host ?? '127.0.0.1',
      credentials: await grpcCredentials(config),
    });
  const dashboardRefusals = new RepeatedWarning(logger, 'dashboard API request refused');
  const startAdmin = (): Promise<AdminServer> =>
    startAdminServer({
      port: options.adminPort,
      host: options.adminHost ?? options.host ?? '0.0.0.0',
      metrics,
      routes: dashboardRoutes({
        dashboard,
        actions: engineActions(engine, () => config),
        config: () => config,
        // Counted and logged as the purge API's refusals are: a guessed token is a refused purge.
        onRefusedToken: (route) => {
          metrics.recordPurge('unauthorized');
          dashboardRefusals.warn({ route, reason: 'missing or invalid purge token' });
        },
      }),
      readiness: async () => {
        if (closing) return { ready: false, reason: 'shutting down' };
        const reason = schemaSource.unavailableReason();
        if (reason) return { ready: false, reason: `origin schema: ${reason}` };
        try {
          await store.ping();
        } catch (error) {
          return { ready: false, reason: `store: ${errorMessage(error)}` };
        }
        return { ready: true };
      },
    });
  // A start that fails part way (a port in use) leaves nothing running: the demo and tests start
  // sidecars inside processes that go on.
  const extProc = await startExtProc().catch(async (error: unknown) => {
    schemaSource.close();
    await store.close();
    throw error;
  });
  const admin = await startAdmin().catch(async (error: unknown) => {
    await extProc.close(0);
    schemaSource.close();
    await store.close();
    throw error;
  });
  const startedFrom = options.configFingerprint === undefined ? {} : { startedFrom: options.configFingerprint };
  const watcher = options.configPath
    ? watchConfig(options.configPath, {
        onChange: (next) => {
          const needRestart = settingsReadAtStart(startConfig, next);
          // First what can throw, so that a change that fails leaves the configuration as it was.
          schemaSource.reload(next);
          config = inEffect(next, startConfig);
          logSecretHeaders = secretHeaderNames(config);
          metrics.recordConfigReload('ok');
          dashboard.recordReload('ok');
          logger.info({ path: options.configPath }, 'configuration reloaded');
          for (const warning of configWarnings(next)) logger.warn({ warning }, 'configuration warning');
          if (needRestart.length > 0) {
            logger.warn({ keys: needRestart }, 'these changed settings take effect only after a restart');
          }
        },
        onError: (error) => {
          metrics.recordConfigReload('refused');
          dashboard.recordReload('refused', error.message);
          logger.error({ err: error.message }, 'new configuration refused; keeping the current one');
        },
      }, startedFrom)
    : undefined;
  logger.info(
    { grpcPort: extProc.port, grpcTls: config.grpc?.tls !== undefined, adminPort: admin.port, store: config.redis ? 'redis' : 'memory' },
    'svc-cache serving',
  );
  for (const warning of configWarnings(config)) logger.warn({ warning }, 'configuration warning');
  // svc_cache_store_up follows the store with no traffic and no probe: an alert on it needs no
  // request to notice Redis down (README, Metrics). A failed ping is counted and logged nowhere else.
  const storeWatch = setInterval(() => void store.ping().catch(() => undefined), options.storePingIntervalMs ?? STORE_PING_INTERVAL_MS).unref();
  void store.ping().catch(() => undefined);
  return {
    grpcPort: extProc.port,
    adminPort: admin.port,
    engine,
    store,
    metrics,
    dashboard,
    schemaReady: schemaSource.ready,
    close: async (graceMs) => {
      closing = true;
      clearInterval(storeWatch);
      watcher?.close();
      await extProc.close(graceMs);
      await admin.close();
      schemaSource.close();
      engine.close();
      await store.close();
    },
  };
}

/** How often the store is pinged for `svc_cache_store_up`, besides each /readyz and dashboard refresh. */
const STORE_PING_INTERVAL_MS = 15_000;

/** One ping's round trip and the store errors counted since start, for the dashboard. */
async function storeHealth(store: CacheStore, metrics: Metrics): Promise<StoreHealth> {
  const errors = (await metrics.registry.getSingleMetric('svc_cache_store_errors_total')?.get())?.values ?? [];
  const errorCount = errors.reduce((total, sample) => total + sample.value, 0);
  const started = performance.now();
  try {
    await store.ping();
    return { up: true, roundTripMs: performance.now() - started, errors: errorCount };
  } catch (error) {
    return { up: false, roundTripMs: undefined, errors: errorCount, reason: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * `grpc.tls`: only a client presenting a certificate signed by `clientCa` may open a stream, for an
 * Envoy outside the pod. Read once at start.
 */
async function grpcCredentials(config: Config): Promise<grpc.ServerCredentials | undefined> {
  const tls = config.grpc?.tls;
  if (!tls) return undefined;
  const [cert, key, clientCa] = await Promise.all([tls.cert, tls.key, tls.clientCa].map((file) => readFile(file)));
  const checkClientCertificate = true;
  return grpc.ServerCredentials.createSsl(clientCa!, [{ cert_chain: cert!, private_key: key! }], checkClientCertificate);
}

/**
 * Scope buckets are named by a keyed hash. Replicas that share a store must share the key, so it
 * comes from the config; without one, a random key per process keeps raw values unguessable but
 * replicas then do not share scoped entries.
 */
function scopeKeySecret(config: Config, logger: Logger): Buffer {
  if (config.cache.scopeKeySecret) return Buffer.from(config.cache.scopeKeySecret, 'utf8');
  if (config.redis) {
    logger.warn('cache.scopeKeySecret is not set: replicas sharing this Redis will not share scoped entries');
  }
  return randomBytes(32);
}

/** Headers whose values must never reach a log line: the purge token's and those scopes are keyed on. */
function secretHeaderNames(config: Config): string[] {
  const scopeHeaders = Object.values(config.scopes)
    .flatMap((scope) => scopeSources(definitionOf(scope)))
    .filter((source) => source.kind === 'header')
    .map((source) => source.name);
  return [config.purge.header, ...scopeHeaders];
}

/**
 * Settings read once when the sidecar starts: the store connection, the ext_proc port's TLS, the
 * bucket hash key, the memory bound and the log level (README, Hot reload).
 */
const READ_AT_START: ReadonlyArray<readonly string[]> = [['redis'], ['grpc'], ['cache', 'scopeKeySecret'], ['cache', 'memoryMaxBytes'], ['logging', 'level']];

/**
 * A reloaded configuration as the process runs it: the settings read only at start keep their
 * values from then, so the dashboard's configuration view shows what is in effect and each later
 * reload still warns of them.
 */
function inEffect(next: Config, start: Config): Config {
  return READ_AT_START.reduce((config, path) => withValueAt(config, path, valueAt(start, path)), next);
}

/** The start-only settings a reload changes, which must say so rather than pretend. */
function settingsReadAtStart(current: Config, next: Config): string[] {
  return READ_AT_START.filter((path) => JSON.stringify(valueAt(current, path)) !== JSON.stringify(valueAt(next, path))).map(formatKeyPath);
}
