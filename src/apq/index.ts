export {
  persistedQueryNotFound,
  registerPersistedQuery,
  resolvePersistedQuery,
  withoutPersistedQuery,
  type PersistedQueryDependencies,
  type PersistedQueryRegistration,
  type PersistedQueryRefusal,
  type PersistedQueryResolution,
} from './persistedQuery.js';
export { QueryTexts } from './queryTexts.js';
export { MemoryPersistedQueryRegistry, type PersistedQueryRegistry } from './registry.js';
