import type { CacheRule } from '../config/index.js';
import type { Selection } from '../graphql/index.js';

/** How a query may be cached, from every rule its selection matches (docs/graphql-caching.md, Rules). */
export interface CachePolicy {
  /** Seconds fresh: the smallest maxAge of the matched rules. */
  maxAge: number;
  /** Seconds a stale entry may still be served: the smallest swr of the matched rules. */
  swr: number;
  /** Seconds past maxAge an entry may still answer for an origin that failed: the smallest staleIfError of the matched rules. */
  staleIfError: number;
  /** Custom scopes whose keys form the bucket (the union of the matched rules' scopes); empty means PUBLIC. */
  scopes: readonly string[];
  matched: readonly CacheRule[];
}

/** `undefined` when no rule matches: the query is not cached. */
export function cachePolicyFor(rules: readonly CacheRule[], selection: Selection): CachePolicy | undefined {
  const matched = rules.filter((rule) => ruleMatches(rule, selection));
  if (matched.length === 0) return undefined;
  const scopes = new Set<string>();
  for (const rule of matched) if (rule.scope !== undefined && rule.scope !== 'PUBLIC') scopes.add(rule.scope);
  return {
    maxAge: Math.min(...matched.map((rule) => rule.maxAge)),
    swr: Math.min(...matched.map((rule) => rule.swr)),
    staleIfError: Math.min(...matched.map((rule) => rule.staleIfError)),
    scopes: [...scopes].sort(),
    matched,
  };
}

function ruleMatches(rule: CacheRule, selection: Selection): boolean {
  if (Array.isArray(rule.types)) return rule.types.some((type) => selection.types.has(type));
  return Object.entries(rule.types).some(([type, fields]) =>
    fields.length === 0 ? selection.types.has(type) : fields.some((field) => selection.fields.has(`${type}.${field}`)),
  );
}

/** The introspection root fields (`__typename` is not one: it reads no schema). */
const INTROSPECTION_FIELDS = new Set(['__schema', '__type']);

/**
 * Whether the selection reads introspection that no rule names by field (`types: { Query: [__schema] }`):
 * a rule on a type alone (`[Query]`) does not make the schema cacheable (README, HIT, MISS, PASS).
 */
export function selectsUnnamedIntrospection(rules: readonly CacheRule[], selection: Selection): boolean {
  const used = [...selection.fields].filter((coordinate) => INTROSPECTION_FIELDS.has(coordinate.slice(coordinate.indexOf('.') + 1)));
  if (used.length === 0) return false;
  const named = new Set<string>();
  for (const rule of rules) {
    if (Array.isArray(rule.types)) continue;
    for (const [type, fields] of Object.entries(rule.types)) for (const field of fields) named.add(`${type}.${field}`);
  }
  return used.some((coordinate) => !named.has(coordinate));
}
