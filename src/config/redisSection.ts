import type { KeyIssue } from './keyPath.js';

/**
 * How the settings of the `redis` section fit together (README, Every key; Redis: standalone,
 * Cluster, Sentinel). Read from unvalidated data, like the scope references: zod skips an object's
 * refinements once a value inside is of the wrong type (a `redis.url: 6379`, a `rules[0].maxAge:
 * "x"`), and parseConfig runs this again then, so that one pass reports every problem (README,
 * Configuration).
 */
export function redisSectionIssues(config: unknown): KeyIssue[] {
  const redis = isRecord(config) ? config.redis : undefined;
  if (!isRecord(redis)) return [];
  const issues: KeyIssue[] = [];
  const has = (key: string): boolean => redis[key] !== undefined;
  // A redis section that names no server would silently fall back to the per-replica memory store.
  if (!has('url') && !has('cluster') && !has('sentinel')) {
    issues.push({ path: ['redis'], message: 'expected url, cluster or sentinel: which Redis to use' });
  }
  if (has('cluster') && has('sentinel')) {
    issues.push({ path: ['redis', 'sentinel'], message: 'cluster and sentinel exclude each other: configure one of them' });
  }
  if (has('cluster') && isRecord(redis.localCache) && redis.localCache.enabled === true) {
    issues.push({
      path: ['redis', 'localCache', 'enabled'],
      message:
        'the local cache is not available with redis.cluster: invalidation tracking and the purge acknowledgement are per node; remove it or set it to false',
    });
  }
  if (typeof redis.keyPrefix === 'string' && /[{}]/.test(redis.keyPrefix)) {
    issues.push({ path: ['redis', 'keyPrefix'], message: 'must not contain "{" or "}": svc-cache places its own Redis Cluster hash tags' });
  }
  return issues;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
