import { z } from 'zod';
import type { Problem } from './error.js';
import { withoutQueryValues } from '../util/index.js';
import { formatKeyPath, valueAt, type KeyPath } from './keyPath.js';

/**
 * Zod error map for parsing configuration: every problem with a value reads "expected <what the
 * schema accepts>", worked out from the schema itself so that new settings get clear messages
 * without writing any. Messages written into the schema (refinements, regex messages) still win.
 */
export function expectationMessage(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code === 'unrecognized_keys' || issue.code === 'invalid_key' || issue.code === 'invalid_element') return undefined;
  const schema = issue.schema ?? (isSchema(issue.inst) ? issue.inst : undefined);
  return schema ? `expected ${describeSchema(schema).one}` : undefined;
}

export interface IssueContext {
  /** The data as written in the file (after substitution), to quote what was found. */
  written: unknown;
  schema: z.core.$ZodType;
  lineOf(path: KeyPath, key?: string): number | undefined;
  /**
   * How to show a value that was written, so that values from the environment are never shown;
   * `describe` shows one written in the file itself. A URL `describe` quotes without its
   * credentials (`fromEnvironmentToo`) is shown so from the environment too, naming the variables.
   */
  showValue(value: unknown, describe: (value: unknown) => string, fromEnvironmentToo?: boolean): string;
  /** Whether a problem about this value only repeats one already reported. */
  alreadyReported(value: unknown): boolean;
}

export function validationProblems(issues: readonly z.core.$ZodIssue[], context: IssueContext): Problem[] {
  return issues.flatMap((issue) => problemsOf(issue, issue.path, context));
}

/** How a value written in the file is shown in a message. */
function describeWrittenValue(value: unknown): string {
  if (value === null) return 'an empty value';
  if (Array.isArray(value)) return value.length === 0 ? 'an empty list' : 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') {
    const shown = withoutQueryValues(withoutUrlCredentials(value));
    return JSON.stringify(shown.length > 60 ? `${shown.slice(0, 57)}...` : shown);
  }
  return String(value);
}

/**
 * A URL's user and password replaced, up to the last "@" since a password may hold an unencoded
 * "/" or "@": a node written as `redis://:password@host:port` is quoted back without its password
 * (README, Configuration: never quotes a secret back).
 */
function withoutUrlCredentials(text: string): string {
  // A node written without its scheme (`:password@host:6379`, a space in the password too): what
  // precedes any "@" may be a password, whatever the key; an "@" elsewhere loses a little text.
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/)?.*@/is, '$1[redacted]@');
}

function problemsOf(issue: z.core.$ZodIssue, path: KeyPath, context: IssueContext): Problem[] {
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({
        line: context.lineOf(path, key),
        text: `unknown key "${key}" ${path.length === 0 ? 'at top level' : `in ${formatKeyPath(path)}`}${suggestKey(key, knownKeys(context.schema, path))}`,
      }));
    case 'invalid_union': {
      const closest = closestBranch(issue.errors);
      if (closest) return closest.flatMap((inner) => problemsOf(inner, [...path, ...inner.path], context));
      return valueProblem(issue.message, path, context);
    }
    case 'invalid_key': {
      const mapping = path.slice(0, -1);
      const key = String(path[path.length - 1]);
      return issue.issues.map((inner) => ({
        line: context.lineOf(mapping, key),
        text: `${formatKeyPath(mapping)}: invalid name "${key}": ${inner.message}`,
      }));
    }
    default:
      return valueProblem(issue.message, path, context);
  }
}

function valueProblem(message: string, path: KeyPath, context: IssueContext): Problem[] {
  const where = path.length === 0 ? 'top level' : formatKeyPath(path);
  const line = context.lineOf(path);
  const value = valueAt(context.written, path);
  if (value === undefined) return [{ line, text: `${where}: required, ${message}` }];
  if (context.alreadyReported(value)) return [];
  // A mapping or list is described by its kind alone, never quoted; a scalar in its place may be a secret it holds.
  const scalar = typeof value !== 'object' || value === null;
  const secrecy = secrecyAt(context.schema, path) ?? (scalar ? secrecyWithin(schemaAt(context.schema, path)) : undefined);
  const shown =
    secrecy === 'value' ? context.showValue(value, describeSecret, true) : secrecy === 'url-password'
        ? context.showValue(value, describeUrlWithoutCredentials, true)
        : context.showValue(value, describeWrittenValue);
  const found = message.startsWith('expected ') ? `, got ${shown}` : '';
  return [{ line, text: `${where}: ${message}${found}` }];
}

/**
 * A union whose every branch failed: when exactly one branch got past the shape of the value (a
 * mapping given where a mapping is accepted), its deeper problems say more than "expected A or B".
 */
function closestBranch(branches: readonly (readonly z.core.$ZodIssue[])[]): readonly z.core.$ZodIssue[] | undefined {
  const shapeMatched = branches.filter((issues) => !issues.every((issue) => issue.path.length === 0 && issue.code === 'invalid_type'));
  return shapeMatched.length === 1 ? shapeMatched[0] : undefined;
}

/**
 * A secret is never quoted, but what YAML read it as is told: an unquoted `${SVC_SCOPE_KEY_SECRET}`
 * whose value is all digits, or `true`, is read as a number or a boolean (README, Environment
 * variables), and "got a secret" alone left the operator to guess why a long enough one was refused.
 */
function describeSecret(value: unknown): string {
  if (typeof value === 'string') return `a secret of ${value.length} characters (not shown)`;
  if (typeof value === 'number') return 'a secret read as a number (not shown; a quoted value stays a string)';
  if (typeof value === 'boolean') return 'a secret read as true or false (not shown; a quoted value stays a string)';
  if (value === null) return 'an empty value';
  return `a secret read as ${Array.isArray(value) ? 'a list' : 'a mapping'} (not shown)`;
}

/**
 * How a setting is secret, marked `.meta({ secret })` in the schema: `value`, the whole of it (a token,
 * a key); `url-password`, the password a URL may hold, the rest of the URL being no secret. A `value`
 * setting, and everything inside it, is never quoted back in a message; a URL is quoted without its
 * credentials (describeUrlWithoutCredentials), and the dashboard shows the rest of a URL (README, Dashboard).
 */
export type Secrecy = 'value' | 'url-password';

/** The secrecy of the setting at `path`, or of the setting it sits in; undefined for no secret. */
export function secrecyAt(root: z.core.$ZodType, path: KeyPath): Secrecy | undefined {
  for (let depth = 0; depth <= path.length; depth++) {
    for (let layer = schemaAt(root, path.slice(0, depth)); layer; layer = innerOf(layer)) {
      const secret = z.globalRegistry.get(layer)?.secret;
      if (secret === 'value' || secret === 'url-password') return secret;
    }
  }
  return undefined;
}

/**
 * The secrecy of what a setting holds, for a scalar given in its place: a token
 * written as `tokens: abc` where a list of tokens belongs is a token all the same. A secret anywhere
 * in a mapping or list makes the value one (`value` before `url-password`); the branches of a union
 * (a scope's string form or its JWT mapping) do not, so a mistyped scope definition is still quoted.
 */
function secrecyWithin(schema: z.core.$ZodType | undefined): Secrecy | undefined {
  let found: Secrecy | undefined;
  for (let layer = schema; layer; layer = innerOf(layer)) {
    const secret = z.globalRegistry.get(layer)?.secret;
    if (secret === 'value' || secret === 'url-password') return secret;
  }
  const def = schema && (unwrap(schema) as z.core.$ZodTypes)._zod.def;
  const children = def?.type === 'object' ? Object.values(def.shape) : def?.type === 'array' ? [def.element] : def?.type === 'record' ? [def.valueType] : [];
  for (const child of children) {
    const secrecy = secrecyWithin(child);
    if (secrecy === 'value') return secrecy;
    found ??= secrecy;
  }
  return found;
}

/**
 * A URL that may hold a password, quoted only where what follows its last "@" cannot be part of the
 * password: written as `scheme://...` without spaces, "?" or "#" (which would end a password written
 * unencoded, README, Every key: redis.url). Everything between "://" and the last "@" is replaced,
 * since a password may hold an unencoded "/" or "@". Without an "@", the value is quoted only when
 * it parses as a URL: `redis://host:99999` and `redis://default:98765432` (a user and password
 * written without the "@") read alike, so neither is. Anything else is not quoted.
 */
function describeUrlWithoutCredentials(value: unknown): string {
  // `host:port` is the usual slip, but the value may as well be a password pasted alone.
  if (typeof value === 'string' && !value.includes('://')) return `a value of ${value.length} characters without "://" (not shown: it may be a password)`;
  const parts = typeof value === 'string' ? /^([a-z][a-z0-9+.-]*:\/\/)([^\s?#]*)$/i.exec(value) : null;
  if (!parts) return describeSecret(value);
  const [, scheme = '', rest = ''] = parts;
  const at = rest.lastIndexOf('@');
  if (at !== -1) return describeWrittenValue(`${scheme}[redacted]${rest.slice(at)}`);
  return URL.canParse(String(value)) ? describeWrittenValue(value) : describeSecret(value);
}

function suggestKey(key: string, known: readonly string[]): string {
  if (known.length === 0) return '';
  const close = known.find((candidate) => candidate.toLowerCase() === key.toLowerCase())
    ?? known.find((candidate) => editDistance(candidate.toLowerCase(), key.toLowerCase()) <= Math.min(2, Math.floor(key.length / 3)));
  return close ? `; did you mean "${close}"?` : `; expected one of: ${known.join(', ')}`;
}

function knownKeys(root: z.core.$ZodType, path: KeyPath): string[] {
  const schema = schemaAt(root, path);
  const def = schema && (unwrap(schema) as z.core.$ZodTypes)._zod.def;
  return def?.type === 'object' ? Object.keys(def.shape) : [];
}

function schemaAt(root: z.core.$ZodType, path: KeyPath): z.core.$ZodType | undefined {
  let schema: z.core.$ZodType | undefined = root;
  for (const segment of path) {
    if (!schema) return undefined;
    schema = childSchema(unwrap(schema), segment);
  }
  return schema;
}

function childSchema(schema: z.core.$ZodType, segment: PropertyKey): z.core.$ZodType | undefined {
  const def = (schema as z.core.$ZodTypes)._zod.def;
  switch (def.type) {
    case 'object':
      return def.shape[String(segment)];
    case 'array':
      return def.element;
    case 'record':
      return def.valueType;
    case 'union':
      // A scope's string form or its JWT mapping: the branch that has the key.
      for (const option of def.options) {
        const child = childSchema(unwrap(option), segment);
        if (child) return child;
      }
      return undefined;
    default:
      return undefined;
  }
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] as number;
}

/** A phrase for what a schema accepts, alone ("a whole number >= 0") and in a list ("whole numbers >= 0"). */
interface Expectation {
  one: string;
  many: string;
}

function describeSchema(schema: z.core.$ZodType): Expectation {
  const description = z.globalRegistry.get(schema)?.description;
  if (description) return { one: description, many: `values that are each ${description}` };
  const def = (schema as z.core.$ZodTypes)._zod.def;
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
    case 'nonoptional':
      return describeSchema(def.innerType);
    case 'pipe':
      return describeSchema(def.in);
    case 'string':
      return describeString(schema);
    case 'number':
      return describeNumber(schema);
    case 'boolean':
      return { one: 'true or false', many: 'true/false values' };
    case 'enum': {
      const values = Object.values(def.entries).join(', ');
      return { one: `one of ${values}`, many: `values among ${values}` };
    }
    case 'literal':
      return { one: def.values.map((value) => JSON.stringify(value)).join(' or '), many: 'fixed values' };
    case 'array': {
      const nonEmpty = minimumLength(schema) > 0 ? 'non-empty ' : '';
      const items = describeSchema(def.element).many;
      return { one: `a ${nonEmpty}list of ${items}`, many: `${nonEmpty}lists of ${items}` };
    }
    case 'object': {
      const keys = Object.keys(def.shape);
      const withKeys = keys.length === 1 ? ` with the key ${keys[0]}` : ` with the keys ${keys.join(', ')}`;
      return { one: `a mapping${withKeys}`, many: `mappings${withKeys}` };
    }
    case 'record': {
      const values = describeSchema(def.valueType).many;
      return { one: `a mapping of names to ${values}`, many: `mappings of names to ${values}` };
    }
    case 'union':
      return {
        one: def.options.map((option) => describeSchema(option).one).join(' or '),
        many: def.options.map((option) => describeSchema(option).many).join(' or '),
      };
    default:
      return { one: 'a valid value', many: 'valid values' };
  }
}

function describeString(schema: z.core.$ZodType): Expectation {
  const def = (schema as z.core.$ZodTypes)._zod.def;
  if ('format' in def && def.format === 'url') return { one: 'a URL', many: 'URLs' };
  const pattern = checksOf(schema).find((check) => check.check === 'string_format' && check.format === 'regex');
  if (pattern && 'pattern' in pattern && pattern.pattern) {
    return { one: `a string matching ${String(pattern.pattern)}`, many: `strings matching ${String(pattern.pattern)}` };
  }
  const minimum = minimumLength(schema);
  if (minimum === 1) return { one: 'a non-empty string', many: 'non-empty strings' };
  if (minimum > 1) return { one: `a string of at least ${minimum} characters`, many: `strings of at least ${minimum} characters` };
  return { one: 'a string', many: 'strings' };
}

function describeNumber(schema: z.core.$ZodType): Expectation {
  const checks = checksOf(schema);
  const noun = checks.some((check) => check.check === 'number_format' && /int/.test(check.format)) ? 'whole number' : 'number';
  const lower = checks.find((check) => check.check === 'greater_than');
  const upper = checks.find((check) => check.check === 'less_than');
  if (lower?.check === 'greater_than' && lower.value === 0 && !lower.inclusive && !upper) {
    return { one: `a positive ${noun}`, many: `positive ${noun}s` };
  }
  const bounds = [
    lower?.check === 'greater_than' ? ` ${lower.inclusive ? '>=' : '>'} ${String(lower.value)}` : '',
    upper?.check === 'less_than' ? ` ${upper.inclusive ? '<=' : '<'} ${String(upper.value)}` : '',
  ]
    .filter(Boolean)
    .join(' and');
  return { one: `a ${noun}${bounds}`, many: `${noun}s${bounds}` };
}

function minimumLength(schema: z.core.$ZodType): number {
  const check = checksOf(schema).find((candidate) => candidate.check === 'min_length');
  return check?.check === 'min_length' ? check.minimum : 0;
}

function checksOf(schema: z.core.$ZodType): z.core.$ZodChecks['_zod']['def'][] {
  return (schema._zod.def.checks ?? []).map((check) => (check as z.core.$ZodChecks)._zod.def);
}

function unwrap(schema: z.core.$ZodType): z.core.$ZodType {
  const inner = innerOf(schema);
  return inner ? unwrap(inner) : schema;
}

/** The schema a wrapper (optional, default, ...) stands for. */
function innerOf(schema: z.core.$ZodType): z.core.$ZodType | undefined {
  const def = (schema as z.core.$ZodTypes)._zod.def;
  if (def.type === 'optional' || def.type === 'default' || def.type === 'nullable' || def.type === 'prefault') {
    return def.innerType;
  }
  return def.type === 'pipe' ? def.in : undefined;
}

function isSchema(value: unknown): value is z.core.$ZodType {
  if (typeof value !== 'object' || value === null || !('_zod' in value)) return false;
  const def = (value as z.core.$ZodType)._zod.def;
  return 'type' in def && !('check' in def);
}
