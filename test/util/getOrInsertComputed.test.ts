import { describe, expect, it } from 'vitest';
import { getOrInsertComputed } from '../../src/util/index.js';

describe('getOrInsertComputed', () => {
  it('computes a missing value once, into a Map or a WeakMap', () => {
    const computed: string[] = [];
    const lengths = new Map<string, number>();
    const compute = (key: string): number => {
      computed.push(key);
      return key.length;
    };
    expect([getOrInsertComputed(lengths, 'ab', compute), getOrInsertComputed(lengths, 'ab', compute)]).toEqual([2, 2]);
    expect(computed).toEqual(['ab']);
    const key = {};
    const byObject = new WeakMap<object, string[]>();
    expect(getOrInsertComputed(byObject, key, () => ['x'])).toBe(getOrInsertComputed(byObject, key, () => ['y']));
  });
});
