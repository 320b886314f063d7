import { Kind, type DocumentNode, type FragmentDefinitionNode, type SelectionSetNode } from 'graphql';

/**
 * The limits svc-cache enforces on an operation before anything reaches the origin: a deep or
 * alias-heavy query costs the origin far more than its few bytes suggest (DESIGN.md: 400).
 */
export interface OperationLimits {
  maxQueryBytes: number;
  maxDepth: number;
  maxAliases: number;
}

export interface LimitViolation {
  message: string;
  code: 'QUERY_TOO_LARGE' | 'QUERY_TOO_DEEP' | 'TOO_MANY_ALIASES';
}

export function queryTextViolation(query: string, limits: OperationLimits): LimitViolation | undefined {
  const bytes = Buffer.byteLength(query);
  if (bytes <= limits.maxQueryBytes) return undefined;
  return { message: `Query is ${bytes} bytes; the limit is ${limits.maxQueryBytes}`, code: 'QUERY_TOO_LARGE' };
}

/** `document` holds one operation and the fragments it uses (`selectOperation(...).document`). */
export function operationViolation(document: DocumentNode, limits: OperationLimits): LimitViolation | undefined {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const operation = document.definitions.find((definition) => definition.kind === Kind.OPERATION_DEFINITION);
  if (!operation || operation.kind !== Kind.OPERATION_DEFINITION) return undefined;

  let aliases = 0;
  let deepest = 0;
  // Fragments are walked at every place they are spread: that is what the origin executes. The
  // walk stops as soon as a limit is passed, so a fragment bomb costs no more than the limits.
  const walk = (selectionSet: SelectionSetNode, depth: number, spreading: ReadonlySet<string>): boolean => {
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        if (selection.alias) aliases += 1;
        if (aliases > limits.maxAliases) return false;
        if (selection.selectionSet) {
          deepest = Math.max(deepest, depth + 1);
          if (deepest > limits.maxDepth) return false;
          if (!walk(selection.selectionSet, depth + 1, spreading)) return false;
        }
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (!walk(selection.selectionSet, depth, spreading)) return false;
      } else {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        // A cycle is a validation error the origin reports; svc-cache only must not loop on it.
        if (!fragment || spreading.has(name)) continue;
        if (!walk(fragment.selectionSet, depth, new Set([...spreading, name]))) return false;
      }
    }
    return true;
  };
  walk(operation.selectionSet, 0, new Set());
  if (deepest > limits.maxDepth) {
    return { message: `Query is deeper than ${limits.maxDepth} levels`, code: 'QUERY_TOO_DEEP' };
  }
  if (aliases > limits.maxAliases) {
    return { message: `Query has more than ${limits.maxAliases} aliases`, code: 'TOO_MANY_ALIASES' };
  }
  return undefined;
}
