import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { z } from 'zod';
import { substituteEnvironment } from './env.js';
import { ConfigError, configErrorFrom, type Problem } from './error.js';
import { expectationMessage, validationProblems } from './issues.js';
import { configSchema, type Config } from './schema.js';
import { redisSectionIssues } from './redisSection.js';
import { scopeReferenceIssues } from './scopeReferences.js';
import { parseYamlFile } from './yamlFile.js';
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
 * so a section whose settings are all commented out falls back to its defaults.
 */
export function parseConfig(text: string, options: ParseConfigOptions): Config {
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
        showValue: (value, describe) => {
          const variables = isScalarValue(value) ? substitution.fromEnvironment.get(String(value)) : undefined;
          if (!variables) return describe(value);
          const references = variables.map((name) => `\${${name}}`).join(' and ');
          return typeof value === 'string' && /^(-?\d+(\.\d+)?|true|false)$/.test(value)
            ? `the value of ${references} as a string (leave the reference unquoted for a number or true/false)`
            : `the value of ${references}`;
        },
        alreadyReported: (value) => typeof value === 'string' && substitution.unresolved.has(value),
      }),
    );
  }
  if (problems.length > 0 || !result.success) throw configErrorFrom(source, problems);
  const baseDir = options.baseDir ?? dirname(resolve(source));
  return withJwksFilesResolved(withSchemaFileResolved(result.data, baseDir), baseDir);
}

/** Reads and parses a configuration file; a relative `schema.file` is taken from the file's directory and must be readable. */
export async function loadConfig(path: string, env?: NodeJS.ProcessEnv): Promise<Config> {
  const snapshot = await readConfigSnapshot(path, env);
  if ('error' in snapshot) throw snapshot.error;
  return snapshot.config;
}

/**
 * The configuration file as it is now, or why it cannot be used, with a fingerprint of everything
 * it was built from to tell a real change from a touch.
 */
export type ConfigSnapshot = {
  fingerprint: string;
  /** The configuration file and, once known, the schema file it names. */
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
  const fingerprint = sha256(text);
  let config: Config;
  try {
    config = parseConfig(text, { source: path, env, baseDir: dirname(resolve(path)) });
  } catch (error) {
    if (error instanceof ConfigError) return { fingerprint, files: [path], unreadable: false, error };
    throw error;
  }
  const schemaFile = config.schema?.file;
  if (schemaFile === undefined) return { fingerprint, files: [path], config };
  const files = [path, schemaFile];
  try {
    return { fingerprint: `${fingerprint} ${sha256(await readFile(schemaFile, 'utf8'))}`, files, config };
  } catch (error) {
    const reason = describeFileError(error);
    return {
      fingerprint: `${fingerprint} unreadable: ${reason}`,
      files,
      unreadable: false,
      error: new ConfigError(path, [`schema.file: cannot read "${schemaFile}": ${reason}`]),
    };
  }
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

function withSchemaFileResolved(config: Config, baseDir: string): Config {
  const file = config.schema?.file;
  if (file === undefined) return config;
  return { ...config, schema: { ...config.schema, file: resolve(baseDir, file) } };
}

/** A relative `jwksFile` is taken from the configuration file's directory, as `schema.file` is. */
function withJwksFilesResolved(config: Config, baseDir: string): Config {
  const scopes = Object.entries(config.scopes).map(([name, scope]) =>
    typeof scope === 'string' || scope.jwt.jwksFile === undefined ? [name, scope] : [name, { ...scope, jwt: { ...scope.jwt, jwksFile: resolve(baseDir, scope.jwt.jwksFile) } }],
  );
  return { ...config, scopes: Object.fromEntries(scopes) as Config['scopes'] };
}

function describeFileError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'it is a directory, not a file';
    default:
      return errorMessage(error);
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
