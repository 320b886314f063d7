import { parse, visit, type DocumentNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { collectFields, FragmentMemo, fragmentsOf } from '../../src/graphql/fragments.js';
import { measureOperation, operationViolation } from '../../src/graphql/limits.js';
import { operationPlan } from '../../src/invalidation/selectionPlan.js';
import { prepare } from '../invalidation/fixtures.js';

/**
 * `fragment Fi on T { <body> ...Fi+1 ...Fi+1 }` for i < levels: spreads double at each level, so a
 * walk following every spread anew visits 2^levels fragments (width 3: 3^levels).
 */
function fragmentBomb(levels: number, body: string, options: { width?: number; type?: string; root?: string } = {}): string {
  const { width = 2, type = 'Query', root = '{ ...F0 }' } = options;
  const fragments = Array.from(
    { length: levels },
    (_, i) => `fragment F${i} on ${type} { ${body.replaceAll('NEXT', `...F${i + 1} `.repeat(width))} }`,
  );
  return `${root} ${fragments.join(' ')} fragment F${levels} on ${type} { ${body.replaceAll('NEXT', '')} }`;
}

const LIMITS = { maxQueryBytes: 1_000_000, maxDepth: 15, maxAliases: 30 };

/** Every selection in the document, each fragment's counted once. */
function selectionCount(document: DocumentNode): number {
  let count = 0;
  const counted = (): void => {
    count += 1;
  };
  visit(document, { Field: counted, InlineFragment: counted, FragmentSpread: counted });
  return count;
}

describe('fragment-doubling documents cost work linear in their size', () => {
  for (const [levels, width] of [
    [24, 2],
    [40, 2],
    [40, 3],
  ] as const) {
    it(`${levels} levels, ${width} spreads each: depth and aliases exact, each selection visited once`, () => {
      const document = parse(fragmentBomb(levels, 'todos { id } NEXT', { width }));
      const measure = measureOperation(document);
      expect(measure).toEqual({ depth: 1, aliases: 0, visitedSelections: selectionCount(document) });
      expect(operationViolation(document, LIMITS)).toBeUndefined();
    });

    it(`${levels} levels, ${width} spreads each, with an alias per fragment: TOO_MANY_ALIASES`, () => {
      const document = parse(fragmentBomb(levels, 'x: todos { id } NEXT', { width }));
      const measure = measureOperation(document, LIMITS.maxAliases + 1);
      // The count saturates at the cap instead of reaching width^levels.
      expect(measure.aliases).toBe(LIMITS.maxAliases + 1);
      expect(measure.visitedSelections).toBe(selectionCount(document));
      expect(operationViolation(document, LIMITS)?.code).toBe('TOO_MANY_ALIASES');
    });

    it(`${levels} levels, ${width} spreads each, nesting a level per fragment: QUERY_TOO_DEEP`, () => {
      const document = parse(fragmentBomb(levels, 'author { todos { NEXT } }', { width, type: 'Todo', root: '{ todos { ...F0 } }' }).replace(
        `fragment F${levels} on Todo { author { todos {  } } }`,
        `fragment F${levels} on Todo { id }`,
      ));
      const measure = measureOperation(document);
      expect(measure.depth).toBe(1 + 2 * levels);
      expect(measure.visitedSelections).toBe(selectionCount(document));
      expect(operationViolation(document, LIMITS)?.code).toBe('QUERY_TOO_DEEP');
    });
  }

  it('counts exactly below the cap: 2^10 - 1 aliases through 10 doubling levels', () => {
    const document = parse(fragmentBomb(10, 'x: todos { id } NEXT'));
    expect(measureOperation(document).aliases).toBe(2 ** 11 - 1);
  });

  it('key-field rewriting and response planning enter each fragment once', () => {
    const query = fragmentBomb(40, 'todos { title author { name } } NEXT');
    const prepared = prepare(query);
    expect(prepared.rewritten).toBe(true);
    const plan = operationPlan(prepared)!.plan;
    // Each of the 41 fragments contributes its one `todos` field once.
    expect(plan.fields().get('todos')).toHaveLength(41);
    expect(plan.child('todos').fields().get('author')).toHaveLength(41);
  });
});

describe('collectFields', () => {
  it('enters a named fragment once per call, through inline fragments, ending cycles', () => {
    const document = parse('{ a ...F ... on Query { ...F b } } fragment F on Query { c ...G } fragment G on Query { d ...F }');
    const operation = document.definitions[0]!;
    if (operation.kind !== 'OperationDefinition') throw new Error('expected an operation');
    const names = collectFields([operation.selectionSet], fragmentsOf(document)).map((field) => field.name.value);
    expect(names).toEqual(['a', 'c', 'd', 'b']);
  });

  it('leaves out fragments the options do not admit and selections they do not include', () => {
    const document = parse('{ a ... on A { b } ...F c @skip(if: true) } fragment F on B { d }');
    const operation = document.definitions[0]!;
    if (operation.kind !== 'OperationDefinition') throw new Error('expected an operation');
    const names = collectFields([operation.selectionSet], fragmentsOf(document), {
      admits: (typeCondition) => typeCondition !== 'A',
      includes: (selection) => (selection.directives ?? []).length === 0,
    }).map((field) => field.name.value);
    expect(names).toEqual(['a', 'd']);
  });
});

describe('FragmentMemo', () => {
  it('computes each fragment once and answers a cycle with the cycle figure', () => {
    const document = parse('fragment F on T { ...G ...G } fragment G on T { ...F }');
    let computed = 0;
    const memo = new FragmentMemo<number>(
      fragmentsOf(document),
      (fragment, self) => {
        computed += 1;
        return fragment.selectionSet.selections.reduce(
          (sum, selection) => sum + (selection.kind === 'FragmentSpread' ? (self.of(selection.name.value) ?? 0) + 1 : 0),
          0,
        );
      },
      -100,
    );
    // G sees F in progress (-100) and adds 1; F adds G + 1 twice.
    expect(memo.of('F')).toBe(2 * (-99 + 1));
    expect(memo.of('F')).toBe(2 * (-99 + 1));
    expect(memo.of('missing')).toBeUndefined();
    expect(computed).toBe(2);
  });
});
