export { startGateway, type Gateway, type GatewayOptions } from './gateway.js';
export {
  envoyProfile,
  productionFilterConfig,
  PRODUCTION_ENVOY_VERSION,
  type EnvoyProfile,
  type FilterConfig,
  type MutationRules,
} from './filterConfig.js';
export type { ExtProcCounters, GatewayStats, ProcessorMessageRecord, RequestRecord } from './stats.js';
