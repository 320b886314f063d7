import type { KeyIssue } from './keyPath.js';

/**
 * Rules name scopes defined elsewhere in the file. The check reads unvalidated data: zod skips
 * refinements once another value is invalid, and parseConfig runs it again then so that one pass
 * reports every problem.
 */
export function scopeReferenceIssues(config: unknown): KeyIssue[] {
  if (!isRecord(config)) return [];
  const issues: KeyIssue[] = [];
  const scopes = isRecord(config.scopes) ? config.scopes : {};
  if (Object.hasOwn(scopes, 'PUBLIC')) {
    issues.push({ path: ['scopes', 'PUBLIC'], message: 'PUBLIC is built in and cannot be redefined' });
  }
  issues.push(...purgeHeaderIssues(config.purge, scopes, isRecord(config.cache) ? config.cache.bypassCacheHeaders : undefined));
  if (!Array.isArray(config.rules)) return issues;
  const known = ['PUBLIC', ...Object.keys(scopes).filter((name) => name !== 'PUBLIC')].join(', ');
  config.rules.forEach((rule: unknown, index) => {
    if (!isRecord(rule) || typeof rule.scope !== 'string' || rule.scope === '' || rule.scope === 'PUBLIC') return;
    if (Object.hasOwn(scopes, rule.scope)) return;
    issues.push({
      path: ['rules', index, 'scope'],
      message: `unknown scope "${rule.scope}": expected one of ${known} (PUBLIC is built in, the others come from "scopes")`,
    });
  });
  return issues;
}

/**
 * The purge token's header is removed from every request svc-cache forwards: one a scope reads
 * would reach the origin never, and every request would fall in that scope's bucket of no value.
 * One that is a bypass header would make every purge and `svc-debug` request skip the cache.
 */
function purgeHeaderIssues(purge: unknown, scopes: Record<string, unknown>, bypassCacheHeaders: unknown): KeyIssue[] {
  if (!isRecord(purge) || typeof purge.header !== 'string') return [];
  const header = purge.header.toLowerCase();
  if (Array.isArray(bypassCacheHeaders) && bypassCacheHeaders.some((name) => typeof name === 'string' && name.toLowerCase() === header)) {
    return [{ path: ['purge', 'header'], message: 'also in cache.bypassCacheHeaders: every purge and svc-debug request would skip the cache; name a header of its own, e.g. svc-purge-token' }];
  }
  const readBy = Object.entries(scopes).find(([, scope]) => {
    const definition = isRecord(scope) ? scope.definition : scope;
    return typeof definition === 'string' && definition.split('|').some((part) => part.trim().toLowerCase() === `header:${header}`);
  });
  if (readBy === undefined) return [];
  return [{ path: ['purge', 'header'], message: `scope "${readBy[0]}" reads this header: svc-cache removes the purge token header from every request it forwards; name one of its own, e.g. svc-purge-token` }];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
