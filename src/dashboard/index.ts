export { Dashboard, type DashboardSources, type DashboardSummary, type StoreHealth } from './dashboard.js';
export { dashboardRoutes, isAllowedHost, type AdminRoutes, type DashboardActions, type InspectInput, type PurgeAnswer } from './http.js';
export { pageSizeBytes } from './page.js';
export { redactedConfig, REDACTED } from './configView.js';
export type { CacheChangeInput } from './recentChanges.js';
export { HIT_RATIO_OUTCOMES, type PassReason, type RequestSummary } from './summary.js';
export { TOP_OPERATIONS } from './topOperations.js';
export { RECENT_CHANGES } from './recentChanges.js';
