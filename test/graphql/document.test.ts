import { hash } from 'node:crypto';
import { print } from 'graphql';
import { describe, expect, it } from 'vitest';
import { parseDocument, selectOperation } from '../../src/graphql/document.js';
import { heapKeptBy } from '../support/heap.js';

describe('remembered documents', () => {
  it('answers the same parse for the same text', () => {
    const first = parseDocument('{ todos { id } }');
    expect(parseDocument('{ todos { id } }')).toBe(first);
  });

  it('stays within its memory bound for distinct dense queries, which keep about 90 bytes per character', () => {
    // Each 100 KB query parses to about 9 MB of nodes: 40 of them, all remembered, would keep about 370 MB.
    const dense = (index: number) => `{ todos { ${'a '.repeat(50_000)}} } # ${index}`;
    const { keptBytes } = heapKeptBy(() => {
      for (let index = 0; index < 40; index += 1) {
        const parsed = parseDocument(dense(index));
        if ('kind' in parsed) throw new Error(parsed.message);
        selectOperation(parsed, undefined);
      }
    });
    expect(keptBytes).toBeLessThan(100 * 1024 * 1024);
  });

  it('is charged for every operation named in a document, so that one named operation by operation leaves it', () => {
    // 200 operations over a 20 KB fragment (about 10,000 tokens, charged 3.8 MB each time): each
    // name keeps a document, an analysis and a prepared copy of its own.
    const operations = Array.from({ length: 200 }, (_, index) => `query O${index} { todos { ...F } }`).join(' ');
    const text = `${operations} fragment F on Todo { ${'title '.repeat(3_500)} }`;
    const parsed = parseDocument(text);
    if ('kind' in parsed) throw new Error(parsed.message);
    for (let index = 0; index < 10; index += 1) selectOperation(parsed, `O${index}`);
    expect(parseDocument(text)).toBe(parsed);
    for (let index = 10; index < 200; index += 1) selectOperation(parsed, `O${index}`);
    expect(parseDocument(text)).not.toBe(parsed);
  });

  it('charges each operation named its own share of a document, so that one of many small operations stays', () => {
    const text = Array.from({ length: 400 }, (_, index) => `query O${index} { todos { id title done } }`).join(' ');
    const parsed = parseDocument(text);
    if ('kind' in parsed) throw new Error(parsed.message);
    for (let index = 0; index < 400; index += 1) selectOperation(parsed, `O${index}`);
    expect(parseDocument(text)).toBe(parsed);
  });
});

describe('selectOperation', () => {
  it('analyses the operation chosen with the fragments it uses, in document order, a chain of 20,000 spreads too; keys the whole document', () => {
    const chain = Array.from({ length: 20_000 }, (_, i) => `fragment F${i} on Todo { ...F${i + 1} }`).join(' ');
    const parsed = parseDocument(`fragment Other on Todo { done } query A { todos { ...Other } } query B { todos { ...F0 } } ${chain} fragment F20000 on Todo { id }`);
    if ('kind' in parsed) throw new Error(parsed.message);
    const selected = selectOperation(parsed, 'B');
    if (selected.kind !== 'operation') throw new Error(selected.reason);
    const names = selected.document.definitions.map((definition) => ('name' in definition ? definition.name?.value : undefined));
    expect(names).toEqual(['B', ...Array.from({ length: 20_001 }, (_, i) => `F${i}`)]);
    // An origin validates every definition: the other operation and its fragment are keyed too.
    expect(selected.normalised).toBe(hash('sha256', print(parsed.document), 'base64url'));
    const other = selectOperation(parsed, 'A');
    expect(other.kind === 'operation' && other.normalised).toBe(selected.normalised);
  });
});
