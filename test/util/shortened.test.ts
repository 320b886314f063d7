import { describe, expect, it } from 'vitest';
import { shortened } from '../../src/util/index.js';

describe('shortened', () => {
  it('keeps a text of at most the characters asked for as it is', () => {
    expect(shortened('', 5)).toBe('');
    expect(shortened('Todos', 5)).toBe('Todos');
  });

  it('cuts a longer one and marks how many characters it cut', () => {
    expect(shortened('TodosAndMore', 5)).toBe('Todos…[+7]');
    expect(shortened('x'.repeat(99_000), 100)).toBe(`${'x'.repeat(100)}…[+98900]`);
  });

  it('never splits a surrogate pair', () => {
    expect(shortened('ab😀cd', 3)).toBe('ab…[+4]');
    expect(shortened('ab😀cd', 4)).toBe('ab😀…[+2]');
  });
});
