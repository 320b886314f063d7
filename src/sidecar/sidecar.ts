import { randomBytes } from 'node:crypto';
import type { Config } from '../config/schema.js';
import { watchConfig } from '../config/index.js';
import { Dashboard, dashboardRoutes, type StoreHealth } from '../dashboard/index.js';
import { DecisionEngine, type RuntimeState } from '../engine/engine.js';
import { scopeSources } from '../engine/scopes.js';
import { startExtProcServer } from '../extproc/server.js';
import { withSecretHeaders, type Logger } from '../observability/log.js';
import { MeasuredStore } from '../observability/measuredStore.js';
import { Metrics } from '../observability/metrics.js';
import { createSchemaSource } from '../schema/index.js';
import { createStore, type CacheStore } from '../store/index.js';
import { startAdminServer } from './admin.js';
import { engineActions, requestSummaryOf, type OperationsByRequest } from './dashboardWiring.js';
import { engineEventsRecordedIn } from './engineEvents.js';

export interface SidecarOptions {
  config: Config;
  /** When given, the file is watched and a valid change applies to new requests. */
  configPath?: string;
  grpcPort: number;
  adminPort: number;
  host?: string;
  logger: Logger;
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
  let config = options.config;
  const logger = withSecretHeaders(options.logger, secretHeaderNames(config));
  let closing = false;
  const metrics = new Metrics();
  const store = new MeasuredStore(
    createStore(config.redis, { memoryMaxBytes: config.cache.memoryMaxBytes, logger }),
    metrics,
  );
  const schemaSource = createSchemaSource(config, logger);
  const state = (): RuntimeState => ({ config, schema: schemaSource.current() });
  const dashboard = new Dashboard({ config: () => config, storeHealth: () => storeHealth(store, metrics) });
  const operations: OperationsByRequest = new WeakMap();
  const recorded = engineEventsRecordedIn(metrics);
  const engine = new DecisionEngine({
    state,
    store,
    events: {
      ...recorded,
      purge: (event) => {
        recorded.purge(event);
        if (event.result === 'purged' || event.result === 'store-failed') {
          dashboard.recordChange({
            kind: 'purge',
            fields: event.fields,
            tags: event.tags,
            removedEntries: event.result === 'purged' ? event.removedEntries : 0,
            result: event.result === 'purged' ? 'ok' : 'failed',
          });
        }
      },
      invalidation: (event) => {
        recorded.invalidation(event);
        dashboard.recordChange({
          kind: 'invalidation',
          fields: [`mutationPolicy ${event.policy}`],
          tags: 'failed' in event ? 0 : event.tags,
          removedEntries: 'failed' in event ? 0 : event.removedEntries,
          result: 'failed' in event ? 'failed' : 'ok',
        });
      },
      operation: (head, name, hash) => operations.set(head, { name, hash }),
    },
    scopeKeySecret: scopeKeySecret(config, logger),
    logger,
  });
  const extProc = await startExtProcServer({
    engine,
    logger,
    metrics,
    port: options.grpcPort,
    host: options.host,
    // Off, the dashboard costs a request nothing (the bench's dashboard on/off figure compares this).
    onStreamEnd: (outcome) => {
      if (config.dashboard.enabled) dashboard.record(requestSummaryOf(outcome, operations));
    },
  });
  const admin = await startAdminServer({
    port: options.adminPort,
    host: options.host,
    metrics,
    routes: dashboardRoutes({ dashboard, actions: engineActions(engine, () => config), config: () => config }),
    readiness: async () => {
      if (closing) return { ready: false, reason: 'shutting down' };
      const reason = schemaSource.unavailableReason();
      if (reason) return { ready: false, reason: `origin schema: ${reason}` };
      try {
        await store.ping();
      } catch (error) {
        return { ready: false, reason: `store: ${error instanceof Error ? error.message : String(error)}` };
      }
      return { ready: true };
    },
  });
  const watcher = options.configPath
    ? watchConfig(options.configPath, {
        onChange: (next) => {
          const needRestart = settingsReadAtStart(config, next);
          config = next;
          schemaSource.reload(next);
          metrics.recordConfigReload('ok');
          dashboard.recordReload('ok');
          logger.info({ path: options.configPath }, 'configuration reloaded');
          if (needRestart.length > 0) {
            logger.warn({ keys: needRestart }, 'these changed settings take effect only after a restart');
          }
        },
        onError: (error) => {
          metrics.recordConfigReload('refused');
          dashboard.recordReload('refused', error.message);
          logger.error({ err: error.message }, 'new configuration refused; keeping the current one');
        },
      })
    : undefined;
  logger.info({ grpcPort: extProc.port, adminPort: admin.port, store: config.redis ? 'redis' : 'memory' }, 'svc-cache serving');
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
      watcher?.close();
      await extProc.close(graceMs);
      await admin.close();
      schemaSource.close();
      await store.close();
    },
  };
}

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
    .flatMap(scopeSources)
    .filter((source) => source.kind === 'header')
    .map((source) => source.name);
  return [config.purge.header, ...scopeHeaders];
}

/**
 * Settings read once when the sidecar starts (the store connection, the bucket hash key, the
 * memory bound, logging); a reload that changes them must say so rather than pretend.
 */
function settingsReadAtStart(current: Config, next: Config): string[] {
  const readAtStart: Array<[string, (config: Config) => unknown]> = [
    ['redis', (config) => config.redis],
    ['cache.scopeKeySecret', (config) => config.cache.scopeKeySecret],
    ['cache.memoryMaxBytes', (config) => config.cache.memoryMaxBytes],
    ['logging.level', (config) => config.logging.level],
    ['scopes (header names kept out of logs)', (config) => Object.values(config.scopes)],
    ['purge.header (kept out of logs)', (config) => config.purge.header],
  ];
  return readAtStart
    .filter(([, read]) => JSON.stringify(read(current)) !== JSON.stringify(read(next)))
    .map(([key]) => key);
}
