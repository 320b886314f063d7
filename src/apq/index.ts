export {
  persistedQueryNotFound,
  resolvePersistedQuery,
  withoutPersistedQuery,
  type PersistedQueryDependencies,
  type PersistedQueryRefusal,
  type PersistedQueryResolution,
} from './persistedQuery.js';
export { MemoryPersistedQueryRegistry, type PersistedQueryRegistry } from './registry.js';
