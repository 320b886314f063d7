import { MemoryPersistedQueryRegistry } from '../../src/apq/index.js';
import type { EngineDependencies, RuntimeState } from '../../src/engine/engine.js';
import { MAX_REWRITTEN_PATH_BYTES } from '../../src/extproc/envoyLimits.js';
import { silentLogger } from '../../src/observability/log.js';
import type { CacheStore } from '../../src/store/index.js';

/** A DecisionEngine's dependencies for unit tests: the given state, store and clock, a real APQ registry, no logs. */
export function unitEngineDependencies(
  state: () => RuntimeState,
  store: CacheStore,
  now: () => number,
  extra: Partial<EngineDependencies> = {},
): EngineDependencies {
  return {
    state,
    store,
    persistedQueries: new MemoryPersistedQueryRegistry({ maxBytes: () => 1024 * 1024 }),
    maxRewrittenPathBytes: MAX_REWRITTEN_PATH_BYTES,
    scopeKeySecret: Buffer.from('test-secret'),
    logger: silentLogger(),
    now,
    ...extra,
  };
}
