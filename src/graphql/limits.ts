import { Kind, type DocumentNode, type OperationDefinitionNode, type SelectionNode, type SelectionSetNode } from 'graphql';
import { bracketNestingOf } from './document.js';
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

/**
 * What a query's text alone is refused for, before it is parsed: its size, and brackets nested
 * deeper than twice the selection sets' limit (selectionNestingLimit). graphql-js's parser recurses
 * at each bracket, and a few KB nested a few thousand deep overflowed the stack, which read as a
 * syntax error: the request then went on unchecked, and its answer emptied the store as an
 * operation svc-cache could not see (found by an outside audit; README, Bad input).
 */
export function queryTextViolation(query: string, limits: OperationLimits): LimitViolation | undefined {
  const bytes = Buffer.byteLength(query);
  if (bytes > limits.maxQueryBytes) return { message: `Query is ${bytes} bytes; the limit is ${limits.maxQueryBytes}`, code: 'QUERY_TOO_LARGE' };
  const most = 2 * selectionNestingLimit(limits.maxDepth);
  if (bracketNestingOf(query) <= most) return undefined;
  return { message: `Query nests brackets ({, [, () more than ${most} deep, the limit`, code: 'QUERY_TOO_DEEP' };
}

/**
 * How deep selection sets may nest, fields and inline fragments alike: twice one more than
 * `limits.maxDepth` (the root's set, then a field's and an inline fragment's at each level), never
 * fewer than 32 (README, Bad input).
 */
export function selectionNestingLimit(maxDepth: number): number {
  return Math.max(MIN_SELECTION_NESTING, 2 * (maxDepth + 1));
}

const MIN_SELECTION_NESTING = 32;

/** `document` holds one operation and the fragments it uses (`selectOperation(...).document`). */
export function operationViolation(document: DocumentNode, limits: OperationLimits): LimitViolation | undefined {
  return violationOf(measureOperation(document, limits.maxAliases + 1), limits);
}

/**
 * The first of `operations` (all of `document`) over the limits, each measured as the origin
 * executes it alone. A fragment is measured once for all of them, so the cost is the document's size
 * however many operations spread it (README, Bad input). The one difference: a fragment in a cycle
 * keeps the figure the first operation to reach it left, which may be less than another operation
 * alone would find; an origin refuses a document with a cycle whole, before running any of it.
 */
export function operationsViolation(document: DocumentNode, operations: readonly OperationDefinitionNode[], limits: OperationLimits): LimitViolation | undefined {
  const measurer = operationMeasurer(document, limits.maxAliases + 1);
  for (const operation of operations) {
    const violation = violationOf(measurer.measure(operation), limits);
    if (violation) return violation;
  }
  return undefined;
}

function violationOf(figures: Figures, limits: OperationLimits): LimitViolation | undefined {
  if (figures.depth > limits.maxDepth) {
    return { message: `Query is deeper than ${limits.maxDepth} levels`, code: 'QUERY_TOO_DEEP' };
  }
  if (figures.aliases > limits.maxAliases) {
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

/** The figures of the document's first operation (operationMeasurer). */
export function measureOperation(document: DocumentNode, aliasCap: number = Number.MAX_SAFE_INTEGER): OperationMeasure {
  const operation = document.definitions.find((definition) => definition.kind === Kind.OPERATION_DEFINITION);
  const measurer = operationMeasurer(document, aliasCap);
  const figures = operation ? measurer.measure(operation) : NOTHING;
  return { ...figures, visitedSelections: measurer.visitedSelections() };
}

/**
 * Depth and aliases as the origin executes an operation of `document`, each fragment spread counting
 * in full, yet each fragment measured once, whichever operation spreads it: a spread adds the
 * fragment's remembered figures. A fragment spread within itself (a cycle, which the origin reports)
 * adds nothing. This walk is what bounds the depth of every later one, so it keeps its own stack:
 * neither nesting nor a chain of spreads costs it call stack (README, Bad input). Aliases saturate
 * at `aliasCap`.
 */
function operationMeasurer(document: DocumentNode, aliasCap: number): { measure(operation: OperationDefinitionNode): Figures; visitedSelections(): number } {
  let visitedSelections = 0;
  const measureSet = (selectionSet: SelectionSetNode, memo: FragmentMemo<Figures>): Figures => {
    const open: OpenSet[] = [openSet(selectionSet, 0)];
    for (;;) {
      const top = open.at(-1)!;
      const selection = top.selections[top.next++];
      if (selection === undefined) {
        open.pop();
        const parent = open.at(-1);
        if (!parent) return top.figures;
        addBelow(parent.figures, top.figures, top.extraDepth, aliasCap);
        continue;
      }
      visitedSelections += 1;
      if (selection.kind === Kind.FIELD) {
        if (selection.alias) addBelow(top.figures, ONE_ALIAS, 0, aliasCap);
        if (selection.selectionSet) open.push(openSet(selection.selectionSet, 1));
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        open.push(openSet(selection.selectionSet, 0));
      } else {
        addBelow(top.figures, memo.of(selection.name.value) ?? NOTHING, 0, aliasCap);
      }
    }
  };
  const memo = new FragmentMemo<Figures>(fragmentsOf(document), (fragment, self) => measureSet(fragment.selectionSet, self), NOTHING);
  return { measure: (operation) => measureSet(operation.selectionSet, memo), visitedSelections: () => visitedSelections };
}

interface Figures {
  depth: number;
  aliases: number;
}

/** A selection set being measured: its selections, the next one to look at, its figures so far. */
interface OpenSet {
  selections: readonly SelectionNode[];
  next: number;
  figures: Figures;
  /** What it adds to its parent's depth: 1 below a field, 0 as an inline fragment. */
  extraDepth: number;
}

function openSet(selectionSet: SelectionSetNode, extraDepth: number): OpenSet {
  return { selections: selectionSet.selections, next: 0, figures: { depth: 0, aliases: 0 }, extraDepth };
}

function addBelow(figures: Figures, below: Figures, extraDepth: number, aliasCap: number): void {
  figures.depth = Math.max(figures.depth, below.depth + extraDepth);
  figures.aliases = Math.min(aliasCap, figures.aliases + below.aliases);
}

const NOTHING: Figures = { depth: 0, aliases: 0 };
const ONE_ALIAS: Figures = { depth: 0, aliases: 1 };
