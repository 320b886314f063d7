import { configWarnings, loadConfig, type CacheRule, type Config } from '../config/index.js';
import { storedDocumentWarnings } from '../engine/index.js';
import { configSchemaMismatches, loadSchemaFile } from '../schema/index.js';

/**
 * `svc-cache check`: a configuration file judged offline, as `serve` would judge it, plus the rules
 * it puts in force. Invalid files throw the ConfigError `serve` prints; names the schema does not
 * have (a warning in `serve`, where the origin may be about to gain them) make `check` fail, since a
 * CI pipeline runs it against the schema it ships with.
 */
export interface CheckReport {
  /** Names in rules, keyFields and listArguments.fields that the schema does not have; empty without a schema. */
  mismatches: string[];
  /** Where the schema came from, or undefined when none was given. */
  schemaFile: string | undefined;
  /** One line per type, and per type and field, that a rule names. */
  effectiveRules: string[];
  /**
   * What the configuration leaves open that it may not mean to (configWarnings), and the manifest's
   * documents svc-cache will not cache or read (storedDocumentWarnings); they do not fail the check.
   */
  warnings: string[];
  /** The stored documents' manifest as read (README, Stored documents sent by id), or undefined without one. */
  storedDocuments: { manifest: string; count: number } | undefined;
}

export async function checkConfigFile(configFile: string, schemaFile: string | undefined, env?: NodeJS.ProcessEnv): Promise<CheckReport> {
  const config = await loadConfig(configFile, env);
  const sdlFile = schemaFile ?? config.schema?.file;
  const schema = sdlFile === undefined ? undefined : await loadSchemaFile(sdlFile);
  return {
    mismatches: schema ? configSchemaMismatches(config, schema) : [],
    schemaFile: sdlFile,
    effectiveRules: effectiveRules(config),
    warnings: [...configWarnings(config), ...storedDocumentWarnings(config, schema)],
    storedDocuments: config.persistedDocuments && { manifest: config.persistedDocuments.manifest, count: config.persistedDocuments.documents?.size ?? 0 },
  };
}

/**
 * The policy a query gets for each type and field the rules name: every matching rule applies, the
 * smallest maxAge, swr and staleIfError win and the scopes add up (README, "Rules"). A field is matched by the
 * rules naming it and by those naming its whole type.
 */
function effectiveRules(config: Config): string[] {
  const targets = new Map<string, { type: string; field: string | undefined }>();
  for (const rule of config.rules) {
    for (const [type, fields] of ruleTargets(rule)) {
      if (fields.length === 0) targets.set(type, { type, field: undefined });
      for (const field of fields) targets.set(`${type}.${field}`, { type, field });
    }
  }
  return [...targets.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, target]) => {
      const matched = config.rules
        .map((rule, index) => ({ rule, index }))
        .filter(({ rule }) => ruleTargets(rule).some(([type, fields]) => type === target.type && (fields.length === 0 || (target.field !== undefined && fields.includes(target.field)))));
      const scopes = [...new Set(matched.map(({ rule }) => rule.scope ?? 'PUBLIC').filter((scope) => scope !== 'PUBLIC'))].sort();
      const maxAge = Math.min(...matched.map(({ rule }) => rule.maxAge));
      const swr = Math.min(...matched.map(({ rule }) => rule.swr));
      const label = target.field === undefined ? `${name} (every field)` : name;
      return `${label}: maxAge ${maxAge}s, swr ${swr}s, ${staleIfErrorText(matched.map(({ rule }) => rule))}scope ${scopes.length > 0 ? scopes.join('+') : 'PUBLIC'} (rules ${matched.map(({ index }) => index).join(', ')})`;
    });
}

/** Shown only where the matched rules all give one, as most configs have none (README, Stale-if-error). */
function staleIfErrorText(matched: readonly CacheRule[]): string {
  const seconds = Math.min(...matched.map((rule) => rule.staleIfError));
  return seconds > 0 ? `staleIfError ${seconds}s, ` : '';
}

function ruleTargets(rule: CacheRule): Array<[string, readonly string[]]> {
  return Array.isArray(rule.types) ? rule.types.map((type) => [type, []]) : Object.entries(rule.types);
}
