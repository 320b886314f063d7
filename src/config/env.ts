import { isMap, isScalar, isSeq, Scalar } from 'yaml';
import type { Problem } from './error.js';
import { formatKeyPath, type KeyPath } from './keyPath.js';
import { keyText, type YamlFile } from './yamlFile.js';

/**
 * `${NAME}` in string values is replaced by the environment variable NAME, `${NAME:-fallback}` uses
 * the fallback when NAME is unset or empty, and `$${` stands for a literal `${`. Substitution works
 * on parsed values rather than on the raw text, so a secret containing quotes, colons or `#` cannot
 * change the structure of the file, and a reference inside a comment is ignored.
 */
export interface Substitution {
  problems: Problem[];
  /** Values that came from the environment, with the variables they came from, to keep secrets out of messages. */
  fromEnvironment: Map<string, string[]>;
  /** Values left as written because a variable was missing: a validation problem about them would only repeat that. */
  unresolved: Set<string>;
}

/** Replaces references in the file's scalars in place. */
export function substituteEnvironment(file: YamlFile, env: NodeJS.ProcessEnv): Substitution {
  const substitution: Substitution = { problems: [], fromEnvironment: new Map(), unresolved: new Set() };
  const visit = (node: unknown, path: KeyPath): void => {
    if (isMap(node)) for (const pair of node.items) visit(pair.value, [...path, keyText(pair.key)]);
    else if (isSeq(node)) node.items.forEach((item, index) => visit(item, [...path, index]));
    else if (isScalar(node) && typeof node.value === 'string') substituteScalar(node, path);
  };
  const substituteScalar = (scalar: Scalar, path: KeyPath): void => {
    const written = scalar.value as string;
    const expansion = expand(written, env);
    const where = formatKeyPath(path);
    const line = file.lineOfNode(scalar);
    for (const name of expansion.missing) {
      substitution.problems.push({ line, text: `${where}: environment variable ${name} is not set` });
    }
    for (const reference of expansion.malformed) {
      substitution.problems.push({ line, text: `${where}: ${describeMalformed(reference)}` });
    }
    if (expansion.missing.length > 0 || expansion.malformed.length > 0) {
      substitution.unresolved.add(written);
      return;
    }
    if (expansion.value === written) return;
    scalar.value = scalar.type === Scalar.PLAIN && WHOLE_REFERENCE.test(written) ? asPlainScalar(expansion.value) : expansion.value;
    if (expansion.variables.length > 0) substitution.fromEnvironment.set(String(scalar.value), expansion.variables);
  };
  visit(file.document.contents, []);
  return substitution;
}

const REFERENCE = /\$\$\{|\$\{([^}]*)\}|\$\{/g;
const VARIABLE = /^([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$/s;
const WHOLE_REFERENCE = /^\$\{[^}]*\}$/;

interface Expansion {
  value: string;
  /** Variables whose values were used. */
  variables: string[];
  missing: string[];
  malformed: string[];
}

function expand(text: string, env: NodeJS.ProcessEnv): Expansion {
  const expansion: Expansion = { value: text, variables: [], missing: [], malformed: [] };
  expansion.value = text.replace(REFERENCE, (reference: string, inner: string | undefined) => {
    if (reference === '$${') return '${';
    const variable = inner === undefined ? null : VARIABLE.exec(inner);
    if (!variable) {
      expansion.malformed.push(reference);
      return reference;
    }
    const name = variable[1] as string;
    const fallback = variable[2];
    const value = env[name];
    if (value !== undefined && !(fallback !== undefined && value === '')) {
      expansion.variables.push(name);
      return value;
    }
    if (fallback !== undefined) return fallback;
    expansion.missing.push(name);
    return reference;
  });
  return expansion;
}

function describeMalformed(reference: string): string {
  const fix = 'write ${NAME} or ${NAME:-fallback}, where NAME is letters, digits and "_", or $${ for a literal "${"';
  return reference === '${'
    ? `"\${" without a closing "}": ${fix}`
    : `malformed variable reference "${reference}": ${fix}`;
}

/**
 * An unquoted value that is only a reference takes the type its text has, so `maxAge: ${MAX_AGE}`
 * gives a number; quoting it keeps a string.
 */
function asPlainScalar(text: string): string | number | boolean {
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  if (text === 'true' || text === 'false') return text === 'true';
  return text;
}
