import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { parseDocument, selectOperation } from '../../src/graphql/document.js';

// A full collection on demand, without --expose-gc on vitest's command line.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

describe('remembered documents', () => {
  it('answers the same parse for the same text', () => {
    const first = parseDocument('{ todos { id } }');
    expect(parseDocument('{ todos { id } }')).toBe(first);
  });

  it('stays within its memory bound for distinct dense queries, which keep about 90 bytes per character', () => {
    // Each 100 KB query parses to about 9 MB of nodes: 40 of them, all remembered, would keep about 370 MB.
    const dense = (index: number) => `{ todos { ${'a '.repeat(50_000)}} } # ${index}`;
    collectGarbage();
    const before = process.memoryUsage().heapUsed;
    for (let index = 0; index < 40; index += 1) {
      const parsed = parseDocument(dense(index));
      if ('kind' in parsed) throw new Error(parsed.message);
      selectOperation(parsed, undefined);
    }
    collectGarbage();
    const keptBytes = process.memoryUsage().heapUsed - before;
    expect(keptBytes).toBeLessThan(100 * 1024 * 1024);
  });
});
