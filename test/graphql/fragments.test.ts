import { Kind, parse, visit, type DocumentNode, type FieldNode, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { collectFields, FragmentMemo, fragmentsOf, fragmentsUsedBy } from '../../src/graphql/fragments.js';
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

  it('plans a place that merges the same selection sets as another once, whatever the path to it (README, Bad input)', () => {
    // Under every alias, and at every level of the chain, the answer reaches selections it has
    // reached before: walked once per path, a fragment of W fields spread at P places cost P x W.
    const aliases = Array.from({ length: 3 }, (_, index) => `a${index}: todo(id: "${index}") { ...C0 }`).join(' ');
    const query = `{ ${aliases} } fragment C0 on Todo { ...I author { ...C1 } } fragment C1 on User { ...J todos { ...C2 } } fragment C2 on Todo { ...I author { ...J } } fragment I on Todo { id title } fragment J on User { id name }`;
    const plan = operationPlan(prepare(query))!.plan;
    const author = plan.child('a0').child('author');
    expect(plan.child('a1').child('author')).toBe(author);
    expect(plan.child('a2').child('author').child('todos')).toBe(author.child('todos'));
    expect([...author.child('todos').fields().keys()]).toEqual(['id', 'title', 'author']);
  });
});

/** `{ todos { ...F0 } }` and `fragment Fi on Todo { ...Fi+1 }` for i < length, the last selecting `leaf`. */
function spreadChain(length: number, leaf: string, operation = '{ todos { ...F0 } }'): string {
  const fragments = Array.from({ length }, (_, i) => `fragment F${i} on Todo { ...F${i + 1} }`);
  return `${operation} ${fragments.join(' ')} fragment F${length} on Todo { ${leaf} }`;
}

function operationOf(document: DocumentNode): OperationDefinitionNode {
  const operation = document.definitions[0]!;
  if (operation.kind !== Kind.OPERATION_DEFINITION) throw new Error('expected an operation');
  return operation;
}

describe('a chain of 20,000 spreads costs no call stack (README, Bad input)', () => {
  const document = parse(spreadChain(20_000, 'x: id'));
  const todos = (operationOf(document).selectionSet.selections[0] as FieldNode).selectionSet!;

  it('collectFields reaches the end of the chain', () => {
    expect(collectFields([todos], fragmentsOf(document)).map((field) => field.alias?.value)).toEqual(['x']);
  });

  it('FragmentMemo works each fragment out once, bottom-up', () => {
    let computed = 0;
    const memo = new FragmentMemo<number>(
      fragmentsOf(document),
      (fragment, self) => {
        computed += 1;
        const first = fragment.selectionSet.selections[0]!;
        return first.kind === Kind.FRAGMENT_SPREAD ? self.of(first.name.value)! + 1 : 0;
      },
      -1,
    );
    expect(memo.of('F0')).toBe(20_000);
    expect(memo.of('F10000')).toBe(10_000);
    expect(computed).toBe(20_001);
  });

  it('measureOperation counts the alias at its end once, each spread visited once', () => {
    expect(measureOperation(document)).toEqual({ depth: 1, aliases: 1, visitedSelections: 20_003 });
  });

  it('fragmentsUsedBy finds every fragment of the chain', () => {
    expect(fragmentsUsedBy(operationOf(document), fragmentsOf(document)).size).toBe(20_001);
  });
});

describe('measureOperation', () => {
  it('measures 100,000 nested fields, more than a recursive walk has stack for', () => {
    let selectionSet = { kind: Kind.SELECTION_SET, selections: [{ kind: Kind.FIELD, name: { kind: Kind.NAME, value: 'id' } }] } as const;
    for (let level = 0; level < 100_000; level++) {
      selectionSet = { kind: Kind.SELECTION_SET, selections: [{ kind: Kind.FIELD, name: { kind: Kind.NAME, value: 'todos' }, selectionSet }] } as never;
    }
    const document: DocumentNode = { kind: Kind.DOCUMENT, definitions: [{ kind: Kind.OPERATION_DEFINITION, operation: 'query' as never, selectionSet }] };
    expect(measureOperation(document)).toEqual({ depth: 100_000, aliases: 0, visitedSelections: 100_001 });
    expect(operationViolation(document, LIMITS)?.code).toBe('QUERY_TOO_DEEP');
  });
});

describe('fragmentsUsedBy', () => {
  it('names the fragments spread within the operation and within those, through fields and inline fragments, ending cycles', () => {
    const document = parse(
      '{ a { ...F } ... on Query { ...G } } fragment F on A { b { ...H } } fragment G on Query { ...G } fragment H on B { c } fragment Unused on A { ...F }',
    );
    expect([...fragmentsUsedBy(operationOf(document), fragmentsOf(document))].sort()).toEqual(['F', 'G', 'H']);
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
