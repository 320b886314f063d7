import { Kind, type DocumentNode, type SelectionSetNode } from 'graphql';
import { FragmentMemo, fragmentsOf } from './fragments.js';

/**
 * The limits svc-cache enforces on an operation before anything reaches the origin: a deep or
 * alias-heavy query costs the origin far more than its few bytes suggest (docs/graphql-caching.md,
 * Limits: answered 400).
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
  const measure = measureOperation(document, limits.maxAliases + 1);
  if (measure.depth > limits.maxDepth) {
    return { message: `Query is deeper than ${limits.maxDepth} levels`, code: 'QUERY_TOO_DEEP' };
  }
  if (measure.aliases > limits.maxAliases) {
    return { message: `Query has more than ${limits.maxAliases} aliases`, code: 'TOO_MANY_ALIASES' };
  }
  return undefined;
}

export interface OperationMeasure {
  /** Nested selection sets below the root, at the deepest place (what the origin executes). */
  depth: number;
  /** Aliases counted at every place a fragment is spread, saturating at the cap asked for. */
  aliases: number;
  /** Selections looked at: at most the document's, however often its fragments are spread. */
  visitedSelections: number;
}

/**
 * Depth and aliases as the origin executes the operation, each fragment spread counting in full,
 * yet each fragment measured once: a spread adds the fragment's remembered figures. A fragment
 * spread within itself (a cycle, which the origin reports) adds nothing.
 */
export function measureOperation(document: DocumentNode, aliasCap: number = Number.MAX_SAFE_INTEGER): OperationMeasure {
  const operation = document.definitions.find((definition) => definition.kind === Kind.OPERATION_DEFINITION);
  let visitedSelections = 0;
  const measureSet = (selectionSet: SelectionSetNode, memo: FragmentMemo<Figures>): Figures => {
    let depth = 0;
    let aliases = 0;
    const add = (below: Figures, extraDepth: number): void => {
      depth = Math.max(depth, below.depth + extraDepth);
      aliases = Math.min(aliasCap, aliases + below.aliases);
    };
    for (const selection of selectionSet.selections) {
      visitedSelections += 1;
      if (selection.kind === Kind.FIELD) {
        if (selection.alias) add({ depth: 0, aliases: 1 }, 0);
        if (selection.selectionSet) add(measureSet(selection.selectionSet, memo), 1);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        add(measureSet(selection.selectionSet, memo), 0);
      } else {
        add(memo.of(selection.name.value) ?? NOTHING, 0);
      }
    }
    return { depth, aliases };
  };
  if (!operation || operation.kind !== Kind.OPERATION_DEFINITION) return { depth: 0, aliases: 0, visitedSelections };
  const memo = new FragmentMemo<Figures>(fragmentsOf(document), (fragment, self) => measureSet(fragment.selectionSet, self), NOTHING);
  const figures = measureSet(operation.selectionSet, memo);
  return { ...figures, visitedSelections };
}

interface Figures {
  depth: number;
  aliases: number;
}

const NOTHING: Figures = { depth: 0, aliases: 0 };
