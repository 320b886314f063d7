export { startGateway, type Gateway, type GatewayOptions } from './gateway.js';
export {
  envoyProfile,
  productionFilterConfig,
  PRODUCTION_ENVOY_VERSION,
  type EnvoyProfile,
  type FilterConfig,
} from './filterConfig.js';
export type { MutationRules } from './mutation.js';
export type { ExtProcCounters, GatewayStats, ProcessorMessageRecord, RequestRecord } from './stats.js';
