export { demoConfig, demoConfigFrom, demoConfigInput } from './demo.js';
export { ConfigError } from './error.js';
export { formatKeyPath, valueAt, withValueAt } from './keyPath.js';
export { secrecyAt, type Secrecy } from './issues.js';
export { loadConfig, loadConfigSnapshot, parseConfig, type ParseConfigOptions } from './load.js';
export {
  parseRedisNode,
  parseRedisUrl,
  type RedisEndpoint,
  type RedisNodeAddress,
  type RedisNodeProblem,
  type RedisUrlProblem,
} from './redisAddress.js';
export {
  configSchema,
  LOCAL_CACHE_DEFAULT_MAX_BYTES,
  type CacheRule,
  type Config,
  type ConfigInput,
  type JwtAlgorithm,
  type JwtScopeSettings,
  type ListArguments,
  type MutationPolicy,
  type ScopeConfig,
} from './schema.js';
export { definitionOf, scopeSources, type ScopeSource } from './scopeSources.js';
export { configWarnings } from './warnings.js';
export { watchConfig, type ConfigWatcher, type ConfigWatchHandlers, type ConfigWatchOptions } from './watch.js';
