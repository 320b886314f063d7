import {
  Kind,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
} from 'graphql';

/**
 * The one way svc-cache follows fragments. A client writes the document, so following each spread
 * anew is not an option: 24 levels of `fragment Fi on Query { ...Fi+1 ...Fi+1 }` would be 2^24
 * visits (docs/graphql-caching.md, Limits). Every walk here costs time linear in the document:
 * `collectFields` enters each named fragment once per call, as GraphQL's CollectFields does, and
 * `FragmentMemo` works a figure out once per fragment and hands it to every spread.
 *
 * Nor may a walk take a stack frame per spread it follows: `fragment Fi on T { ...Fi+1 }` 20,000
 * times is within the limits, of depth 1, and recursing once per spread overflowed the call stack
 * (README, Bad input). Each walk here keeps its own stack of what is left to do.
 */

/** The document's fragment definitions by name, worked out once per document. */
export function fragmentsOf(document: DocumentNode): ReadonlyMap<string, FragmentDefinitionNode> {
  const known = fragmentsByDocument.get(document);
  if (known) return known;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  fragmentsByDocument.set(document, fragments);
  return fragments;
}

/**
 * The names of the fragments the operation uses: spread within it, or within a fragment it uses
 * (what graphql's `separateOperations` keeps, which recurses once per spread).
 */
export function fragmentsUsedBy(operation: OperationDefinitionNode, fragments: ReadonlyMap<string, FragmentDefinitionNode>): ReadonlySet<string> {
  const used = new Set<string>();
  const pending = [...spreadsIn(operation.selectionSet)];
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    if (used.has(name)) continue;
    used.add(name);
    const fragment = fragments.get(name);
    if (fragment) for (const spread of spreadsWithin(fragment)) pending.push(spread);
  }
  return used;
}

/** Which inline fragments and spreads a walk enters, and which selections it counts. */
export interface CollectOptions {
  /** Whether fragments on this type condition apply (undefined: an inline fragment without one). */
  admits?(typeCondition: string | undefined): boolean;
  /** Whether a selection counts at all (e.g. only those no `@skip` could leave out). */
  includes?(selection: SelectionNode): boolean;
}

/**
 * The fields the selection sets select at their own level, in document order, through inline
 * fragments and the spreads the options admit. Each named fragment is entered once per call (as
 * GraphQL's CollectFields does, which also ends cycles), so the cost is at most the document's size.
 */
export function collectFields(
  selectionSets: readonly SelectionSetNode[],
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  options: CollectOptions = {},
): FieldNode[] {
  const admits = options.admits ?? (() => true);
  const includes = options.includes ?? (() => true);
  const fields: FieldNode[] = [];
  const entered = new Set<string>();
  // Taken from the end: a set's selections are pushed last first, so they come off in document order.
  const pending: SelectionNode[] = [];
  const enter = (selectionSet: SelectionSetNode): void => {
    for (let index = selectionSet.selections.length - 1; index >= 0; index--) pending.push(selectionSet.selections[index]!);
  };
  for (let index = selectionSets.length - 1; index >= 0; index--) enter(selectionSets[index]!);
  for (let selection = pending.pop(); selection !== undefined; selection = pending.pop()) {
    if (!includes(selection)) continue;
    if (selection.kind === Kind.FIELD) {
      fields.push(selection);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      if (admits(selection.typeCondition?.name.value)) enter(selection.selectionSet);
    } else {
      const name = selection.name.value;
      const fragment = fragments.get(name);
      if (!fragment || entered.has(name)) continue;
      entered.add(name);
      if (admits(fragment.typeCondition.name.value)) enter(fragment.selectionSet);
    }
  }
  return fields;
}

/**
 * A figure worked out once per fragment and reused at every spread of it. `compute` works out a
 * fragment's figure from its selection set, asking `of` for the fragments it spreads. A fragment
 * spread within its own computation (a cycle, which the origin rejects) counts as `onCycle`.
 *
 * Figures are worked out bottom-up: before a fragment, every fragment spread anywhere within it
 * that has no figure yet, found with a stack of its own, so `of` inside `compute` only ever looks
 * a figure up and a chain of spreads costs no call stack.
 */
export class FragmentMemo<T> {
  private readonly figures = new Map<string, T>();
  /** The fragments on the path from the one asked for down to the one being worked out. */
  private readonly onPath = new Set<string>();

  constructor(
    private readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>,
    private readonly compute: (fragment: FragmentDefinitionNode, memo: FragmentMemo<T>) => T,
    private readonly onCycle: T,
  ) {}

  /** The figure of the fragment named `name`, or undefined when the document has no such fragment. */
  of(name: string): T | undefined {
    if (this.figures.has(name)) return this.figures.get(name);
    const fragment = this.fragments.get(name);
    if (!fragment) return undefined;
    if (this.onPath.has(name)) return this.onCycle;
    this.workOut(fragment);
    return this.figures.get(name);
  }

  /** Works out `fragment` after the fragments it spreads, depth first, each once. */
  private workOut(fragment: FragmentDefinitionNode): void {
    const path: Array<{ fragment: FragmentDefinitionNode; spreads: readonly string[]; next: number }> = [];
    const step = (entered: FragmentDefinitionNode): void => {
      this.onPath.add(entered.name.value);
      path.push({ fragment: entered, spreads: spreadsWithin(entered), next: 0 });
    };
    step(fragment);
    for (let top = path.at(-1); top !== undefined; top = path.at(-1)) {
      const spread = top.spreads[top.next++];
      if (spread === undefined) {
        path.pop();
        const figure = this.compute(top.fragment, this);
        this.onPath.delete(top.fragment.name.value);
        this.figures.set(top.fragment.name.value, figure);
        continue;
      }
      const below = this.fragments.get(spread);
      if (below && !this.figures.has(spread) && !this.onPath.has(spread)) step(below);
    }
  }
}

const fragmentsByDocument = new WeakMap<DocumentNode, ReadonlyMap<string, FragmentDefinitionNode>>();

/** The names of the fragments spread anywhere within the fragment, worked out once per fragment. */
function spreadsWithin(fragment: FragmentDefinitionNode): readonly string[] {
  let spreads = spreadsByFragment.get(fragment);
  if (!spreads) {
    spreads = spreadsIn(fragment.selectionSet);
    spreadsByFragment.set(fragment, spreads);
  }
  return spreads;
}

const spreadsByFragment = new WeakMap<FragmentDefinitionNode, readonly string[]>();

/** The names of the fragments spread anywhere within the selection set, each once. */
function spreadsIn(selectionSet: SelectionSetNode): string[] {
  const spreads = new Set<string>();
  const pending: SelectionSetNode[] = [selectionSet];
  for (let set = pending.pop(); set !== undefined; set = pending.pop()) {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FRAGMENT_SPREAD) spreads.add(selection.name.value);
      else if (selection.selectionSet) pending.push(selection.selectionSet);
    }
  }
  return [...spreads];
}
