import { Kind, type DocumentNode, type FieldNode, type FragmentDefinitionNode, type SelectionNode, type SelectionSetNode } from 'graphql';

/**
 * The one way svc-cache follows fragments. A client writes the document, so following each spread
 * anew is not an option: 24 levels of `fragment Fi on Query { ...Fi+1 ...Fi+1 }` would be 2^24
 * visits (docs/graphql-caching.md, Limits). Every walk here costs time linear in the document:
 * `collectFields` enters each named fragment once per call, as GraphQL's CollectFields does, and
 * `FragmentMemo` works a figure out once per fragment and hands it to every spread.
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
  const collect = (selectionSet: SelectionSetNode): void => {
    for (const selection of selectionSet.selections) {
      if (!includes(selection)) continue;
      if (selection.kind === Kind.FIELD) {
        fields.push(selection);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (admits(selection.typeCondition?.name.value)) collect(selection.selectionSet);
      } else {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        if (!fragment || entered.has(name)) continue;
        entered.add(name);
        if (admits(fragment.typeCondition.name.value)) collect(fragment.selectionSet);
      }
    }
  };
  for (const selectionSet of selectionSets) collect(selectionSet);
  return fields;
}

/**
 * A figure worked out once per fragment and reused at every spread of it. `compute` works out a
 * fragment's figure from its selection set, asking `of` for the fragments it spreads. A fragment
 * spread within its own computation (a cycle, which the origin rejects) counts as `onCycle`.
 */
export class FragmentMemo<T> {
  private readonly figures = new Map<string, T>();
  private readonly inProgress = new Set<string>();

  constructor(
    private readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>,
    private readonly compute: (fragment: FragmentDefinitionNode, memo: FragmentMemo<T>) => T,
    private readonly onCycle: T,
  ) {}

  /** The figure of the fragment named `name`, or undefined when the document has no such fragment. */
  of(name: string): T | undefined {
    const known = this.figures.get(name);
    if (known !== undefined) return known;
    const fragment = this.fragments.get(name);
    if (!fragment) return undefined;
    if (this.inProgress.has(name)) return this.onCycle;
    this.inProgress.add(name);
    const figure = this.compute(fragment, this);
    this.inProgress.delete(name);
    this.figures.set(name, figure);
    return figure;
  }
}

const fragmentsByDocument = new WeakMap<DocumentNode, ReadonlyMap<string, FragmentDefinitionNode>>();
