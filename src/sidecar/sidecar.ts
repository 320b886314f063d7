import { randomBytes } from 'node:crypto';
import type { Config } from '../config/schema.js';
import { watchConfig } from '../config/index.js';
import { DecisionEngine, type RuntimeState } from '../engine/engine.js';
import { startExtProcServer } from '../extproc/server.js';
import type { Logger } from '../observability/log.js';
import { createSchemaSource } from '../schema/index.js';
import { createStore, type CacheStore } from '../store/index.js';
import { startAdminServer } from './admin.js';

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
  /** Resolves once the origin schema is loaded (caching starts then). */
  schemaReady: Promise<void>;
  close(graceMs?: number): Promise<void>;
}

/** `svc-cache serve`: the ext_proc server, its store, schema and config, and the admin port. */
export async function startSidecar(options: SidecarOptions): Promise<Sidecar> {
  const { logger } = options;
  let config = options.config;
  const store = createStore(config.redis, { memoryMaxBytes: config.cache.memoryMaxBytes, logger });
  const schemaSource = createSchemaSource(config, logger);
  const state = (): RuntimeState => ({ config, schema: schemaSource.current() });
  const engine = new DecisionEngine({
    state,
    store,
    scopeKeySecret: scopeKeySecret(config, logger),
    logger,
  });
  const extProc = await startExtProcServer({ engine, logger, port: options.grpcPort, host: options.host });
  const admin = await startAdminServer({
    port: options.adminPort,
    host: options.host,
    readiness: async () => {
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
          config = next;
          schemaSource.reload(next);
          logger.info({ path: options.configPath }, 'configuration reloaded');
        },
        onError: (error) => logger.error({ err: error.message }, 'new configuration refused; keeping the current one'),
      })
    : undefined;
  logger.info({ grpcPort: extProc.port, adminPort: admin.port, store: config.redis ? 'redis' : 'memory' }, 'svc-cache serving');
  return {
    grpcPort: extProc.port,
    adminPort: admin.port,
    engine,
    store,
    schemaReady: schemaSource.ready,
    close: async (graceMs) => {
      watcher?.close();
      await extProc.close(graceMs);
      await admin.close();
      schemaSource.close();
      await store.close();
    },
  };
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
