import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { z } from 'zod';
import { substituteEnvironment } from './env.js';
import { ConfigError, configErrorFrom, type Problem } from './error.js';
import { expectationMessage, validationProblems } from './issues.js';
import { configSchema, type Config } from './schema.js';
import { redisSectionIssues } from './redisSection.js';
import { scopeReferenceIssues } from './scopeReferences.js';
import { parseYamlFile, type YamlFile } from './yamlFile.js';
import { formatKeyPath, valueAt, type KeyPath } from './keyPath.js';
import { describeFileError, readNamedFiles, sha256, type NamedFile } from './namedFiles.js';
import { errorMessage } from '../util/index.js';

export interface ParseConfigOptions {
  /** Names the file in error messages, e.g. "config.yaml". */
  source: string;
  /** Where `${NAME}` references are looked up; defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** The directory a relative `schema.file` is resolved against; defaults to the directory of `source`. */
  baseDir?: string;
}

/**
 * Reads a configuration file's text: YAML, then `${NAME}` substitution, then validation. Throws a
 * ConfigError listing every problem found, in file order. A key with an empty value counts as absent,
 * so a section whose settings are all commented out falls back to its defaults. The files it names
 * are not read here (loadConfig reads them).
 */
export function parseConfig(text: string, options: ParseConfigOptions): Config {
  const read = readConfigText(text, options);
  if (read.config === undefined) throw configErrorFrom(options.source, read.problems);
  return read.config;
}

/** A configuration file's text, read: its configuration when valid, else every problem found. */
interface ConfigText {
  config: Config | undefined;
  problems: Problem[];
  lineOf: YamlFile['lineOf'];
  /** The value written at `key` when it is a non-empty string that no problem already names. */
  pathAt(key: KeyPath): string | undefined;
  /** The names written under `scopes`. */
  scopeNames: string[];
}

function readConfigText(text: string, options: ParseConfigOptions): ConfigText {
  const { source, env = process.env } = options;
  const file = parseYamlFile(text, source);
  const substitution = substituteEnvironment(file, env);
  const written = toPlainData(file.document, source);
  if (written === null || written === undefined) {
    throw new ConfigError(source, ['the file is empty: expected a mapping with at least origin.url']);
  }

  const cleaned = withoutEmptyValues(written);
  const result = configSchema.safeParse(cleaned, { error: expectationMessage });
  const problems: Problem[] = [...substitution.problems];
  if (!result.success) {
    problems.push(
      ...validationProblems(withCrossKeyIssues(result.error.issues, cleaned), {
        written,
        schema: configSchema,
        lineOf: file.lineOf,
        showValue: (value, describe, fromEnvironmentToo = false) => {
          const variables = isScalarValue(value) ? substitution.fromEnvironment.get(String(value)) : undefined;
          if (!variables) return describe(value);
          const references = variables.map((name) => `\${${name}}`).join(' and ');
          if (fromEnvironmentToo) return `${describe(value)} (with the value of ${references})`;
          return typeof value === 'string' && /^(-?\d+(\.\d+)?|true|false)$/.test(value)
            ? `the value of ${references} as a string (leave the reference unquoted for a number or true/false)`
            : `the value of ${references}`;
        },
        alreadyReported: (value) => typeof value === 'string' && substitution.unresolved.has(value),
      }),
    );
  }
  const pathAt = (key: KeyPath): string | undefined => {
    const value = valueAt(written, key);
    return typeof value === 'string' && value !== '' && !substitution.unresolved.has(value) ? value : undefined;
  };
  const baseDir = options.baseDir ?? dirname(resolve(source));
  const config = problems.length > 0 || !result.success ? undefined : withJwksFilesResolved(withSchemaAndManifestResolved(result.data, baseDir), baseDir);
  const scopes = valueAt(written, ['scopes']);
  const scopeNames = typeof scopes === 'object' && scopes !== null && !Array.isArray(scopes) ? Object.keys(scopes) : [];
  return { config, problems, lineOf: file.lineOf, pathAt, scopeNames };
}

/**
 * Reads and parses a configuration file, and the files it names that serve reads at start
 * (src/config/namedFiles.ts): a relative `schema.file` is taken from the file's directory.
 */
export async function loadConfig(path: string, env?: NodeJS.ProcessEnv): Promise<Config> {
  return (await loadConfigSnapshot(path, env)).config;
}

/**
 * loadConfig, with the fingerprint of what the configuration was built from, for a watcher to start
 * from (ConfigWatchOptions.startedFrom).
 */
export async function loadConfigSnapshot(path: string, env?: NodeJS.ProcessEnv): Promise<{ config: Config; fingerprint: string }> {
  const snapshot = await readConfigSnapshot(path, env);
  if ('error' in snapshot) throw snapshot.error;
  return { config: snapshot.config, fingerprint: snapshot.fingerprint };
}

/**
 * The configuration file as it is now, or why it cannot be used, with a fingerprint of everything
 * it was built from to tell a real change from a touch.
 */
export type ConfigSnapshot = {
  fingerprint: string;
  /** The configuration file and the files it names (schema, manifest, TLS, JWKS). */
  files: string[];
} & (
  | { config: Config }
  | {
      error: ConfigError;
      /** The configuration file itself could not be read (as opposed to read and refused). */
      unreadable: boolean;
    }
);

export async function readConfigSnapshot(path: string, env?: NodeJS.ProcessEnv): Promise<ConfigSnapshot> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const reason = describeFileError(error);
    const problem = `cannot read the file: ${reason}`;
    return { fingerprint: `unreadable: ${reason}`, files: [path], unreadable: true, error: new ConfigError(path, [problem]) };
  }
  let read: ConfigText;
  try {
    read = readConfigText(text, { source: path, env, baseDir: dirname(resolve(path)) });
  } catch (error) {
    if (error instanceof ConfigError) return { fingerprint: sha256(text), files: [path], unreadable: false, error };
    throw error;
  }
  const named = await readNamedFiles(read.pathAt, read.scopeNames, dirname(resolve(path)));
  const fingerprint = [sha256(text), ...named.map((file) => file.fingerprint)].join(' ');
  const files = [path, ...named.map((file) => file.path)];
  const problems = [
    ...read.problems,
    ...named.flatMap((file) => (file.problem === undefined ? [] : [{ line: read.lineOf(file.key), text: `${formatKeyPath(file.key)}: ${file.problem}` }])),
  ];
  if (read.config === undefined || problems.length > 0) return { fingerprint, files, unreadable: false, error: configErrorFrom(path, problems) };
  return { fingerprint, files, config: withManifestDocuments(read.config, named) };
}

function toPlainData(document: ReturnType<typeof parseYamlFile>['document'], source: string): unknown {
  try {
    return document.toJS({ maxAliasCount: 1000 });
  } catch (error) {
    throw new ConfigError(source, [`bad YAML: ${errorMessage(error)}`]);
  }
}

/**
 * Zod skips refinements once some value is of the wrong type; the checks across keys (scope
 * references, the redis section) are run again on the data as written so that none is hidden.
 */
function withCrossKeyIssues(issues: readonly z.core.$ZodIssue[], data: unknown): z.core.$ZodIssue[] {
  const reported = new Set(issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  const missed = [...scopeReferenceIssues(data), ...redisSectionIssues(data)]
    .filter((issue) => !reported.has(`${issue.path.join('.')}: ${issue.message}`))
    .map((issue): z.core.$ZodIssue => ({ code: 'custom', ...issue }));
  return [...issues, ...missed];
}

function isScalarValue(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function withoutEmptyValues(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutEmptyValues);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, entry]) => entry !== null)
      .map(([key, entry]) => [key, withoutEmptyValues(entry)]),
  );
}

/** A relative `schema.file` or `persistedDocuments.manifest` is taken from the configuration file's directory. */
function withSchemaAndManifestResolved(config: Config, baseDir: string): Config {
  const file = config.schema?.file;
  const manifest = config.persistedDocuments?.manifest;
  return {
    ...config,
    ...(file === undefined ? {} : { schema: { ...config.schema, file: resolve(baseDir, file) } }),
    ...(manifest === undefined ? {} : { persistedDocuments: { manifest: resolve(baseDir, manifest) } }),
  };
}

/** The manifest's documents, which readNamedFiles read, in the configuration that names it. */
function withManifestDocuments(config: Config, named: readonly NamedFile[]): Config {
  const documents = named.find((file) => file.documents !== undefined)?.documents;
  if (config.persistedDocuments === undefined || documents === undefined) return config;
  return { ...config, persistedDocuments: { ...config.persistedDocuments, documents } };
}

/** A relative `jwksFile` is taken from the configuration file's directory, as `schema.file` is. */
function withJwksFilesResolved(config: Config, baseDir: string): Config {
  const scopes = Object.entries(config.scopes).map(([name, scope]) =>
    typeof scope === 'string' || scope.jwt.jwksFile === undefined ? [name, scope] : [name, { ...scope, jwt: { ...scope.jwt, jwksFile: resolve(baseDir, scope.jwt.jwksFile) } }],
  );
  return { ...config, scopes: Object.fromEntries(scopes) as Config['scopes'] };
}
