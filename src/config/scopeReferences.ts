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

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
