import type { ScopeConfig } from './schema.js';

/** The source text of a scope: the string form itself, or where a JWT scope's token is. */
export function definitionOf(scope: ScopeConfig | undefined): string {
  if (scope === undefined) return '';
  return typeof scope === 'string' ? scope : scope.definition;
}

export interface ScopeSource {
  kind: 'header' | 'cookie';
  name: string;
}

/** Parses `header:authorization|cookie:session` (validated by the config schema). */
export function scopeSources(definition: string): ScopeSource[] {
  return definition.split('|').map((part) => {
    const [kind, name] = part.trim().split(':', 2) as ['header' | 'cookie', string];
    return { kind, name: kind === 'header' ? name.toLowerCase() : name };
  });
}
