/** Where a value sits in the configuration: mapping keys and list indexes from the top. */
export type KeyPath = readonly PropertyKey[];

/** A problem found by a check of its own beside the schema's, under the key it is about. */
export interface KeyIssue {
  path: (string | number)[];
  message: string;
}

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** The path as an operator would write it: `rules[1].maxAge`, `keyFields.types.Product`, `scopes["x.y"]`. */
export function formatKeyPath(path: KeyPath): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else if (PLAIN_KEY.test(String(segment))) text += text === '' ? String(segment) : `.${String(segment)}`;
    else text += `[${JSON.stringify(String(segment))}]`;
  }
  return text;
}

/**
 * A copy of plain data with `value` at `path` (mapping keys only), sharing what is off the path and
 * keeping the keys' order; a missing mapping on the way is created, and an undefined value leaves
 * the key out.
 */
export function withValueAt<T>(data: T, path: readonly string[], value: unknown): T {
  if (path.length === 0) return value as T;
  const [head, ...rest] = path as [string, ...string[]];
  const record = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  const replaced = withValueAt(record[head], rest, value);
  const copy: Record<string, unknown> = { ...record, [head]: replaced };
  if (replaced === undefined) delete copy[head];
  return copy as T;
}

/** The value at `path` in plain data, or undefined when some step is missing. */
export function valueAt(data: unknown, path: KeyPath): unknown {
  let value = data;
  for (const segment of path) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<PropertyKey, unknown>)[segment];
  }
  return value;
}
