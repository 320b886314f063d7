import { isAlias, isMap, isNode, isScalar, isSeq, LineCounter, parseDocument, visit, type Document, type YAMLError } from 'yaml';
import { ConfigError } from './error.js';
import type { KeyPath } from './keyPath.js';

/** A parsed YAML file that can still say on which line each value was written. */
export interface YamlFile {
  document: Document.Parsed;
  /**
   * The line of the value at `path`, or of the deepest step of it that exists (a missing key is
   * reported where its mapping is). With `key`, the line of that key inside the mapping at `path`.
   */
  lineOf(path: KeyPath, key?: string): number | undefined;
  lineOfNode(node: unknown): number | undefined;
}

/** Throws a ConfigError listing every syntax error, each with its line and column. */
export function parseYamlFile(text: string, source: string): YamlFile {
  const lines = new LineCounter();
  const document = parseDocument(text, { lineCounter: lines, merge: true, prettyErrors: false, uniqueKeys: true });
  const at = (offset: number): string => {
    const { line, col } = lines.linePos(offset);
    return `line ${line}, column ${col}`;
  };
  if (document.errors.length > 0) {
    throw new ConfigError(
      source,
      document.errors.map((error) => `${at(error.pos[0])}: ${explainSyntaxError(error, text)}`),
    );
  }
  const danglingAliases: string[] = [];
  visit(document, {
    Alias(_, alias) {
      if (alias.resolve(document) === undefined) {
        danglingAliases.push(`${at(alias.range?.[0] ?? 0)}: bad YAML: *${alias.source} refers to no anchor (an anchor &${alias.source} must come before it)`);
      }
    },
  });
  if (danglingAliases.length > 0) throw new ConfigError(source, danglingAliases);

  const lineOfNode = (node: unknown): number | undefined =>
    isNode(node) && node.range ? lines.linePos(node.range[0]).line : undefined;

  const lineOf = (path: KeyPath, key?: string): number | undefined => {
    let node: unknown = document.contents;
    let line = lineOfNode(node);
    for (const segment of path) {
      const step = childOf(resolveAlias(node, document), segment);
      if (step === undefined) break;
      node = step.value;
      line = lineOfNode(step.value) ?? lineOfNode(step.key) ?? line;
    }
    if (key !== undefined) line = lineOfNode(childOf(resolveAlias(node, document), key)?.key) ?? line;
    return line;
  };

  return { document, lineOf, lineOfNode };
}

/** The text of a mapping key as the configuration sees it. */
export function keyText(key: unknown): string {
  return isScalar(key) ? String(key.value) : String(key);
}

function explainSyntaxError(error: YAMLError, text: string): string {
  const detail = error.message.charAt(0).toLowerCase() + error.message.slice(1);
  switch (error.code) {
    case 'BAD_INDENT':
    case 'TAB_AS_INDENT':
      return /^flow (sequence|map)/.test(detail)
        ? `bad YAML: ${detail} (is a closing bracket missing?)`
        : `bad YAML indentation: ${detail}`;
    case 'DUPLICATE_KEY': {
      const key = /^[^:\n]*/.exec(text.slice(error.pos[0]))?.[0].trim() ?? '';
      return `duplicate key "${key}": a key may appear only once in a mapping`;
    }
    default:
      return `bad YAML: ${detail}`;
  }
}

function childOf(node: unknown, segment: PropertyKey): { key: unknown; value: unknown } | undefined {
  if (isMap(node)) {
    const pair = node.items.find((item) => keyText(item.key) === String(segment));
    return pair && { key: pair.key, value: pair.value };
  }
  if (isSeq(node) && typeof segment === 'number') {
    const item: unknown = node.items[segment];
    return item === undefined ? undefined : { key: undefined, value: item };
  }
  return undefined;
}

function resolveAlias(node: unknown, document: Document.Parsed): unknown {
  return isAlias(node) ? node.resolve(document) : node;
}
