export {
  persistedQueryNotFound,
  registerPersistedQuery,
  resolvePersistedQuery,
  type PersistedQueryDependencies,
  type PersistedQueryRegistration,
  type PersistedQueryRefusal,
  type PersistedQueryResolution,
  type PersistedQueryWarnings,
} from './persistedQuery.js';
export { QueryTexts, REGISTRATION_OVERHEAD_BYTES } from './queryTexts.js';
export { MemoryPersistedQueryRegistry, type PersistedQueryRegistry } from './registry.js';
