import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { operationViolation, queryTextViolation } from '../../src/graphql/limits.js';

const LIMITS = { maxQueryBytes: 100, maxDepth: 3, maxAliases: 2 };

describe('operation limits', () => {
  it('counts depth (nested selection sets below the root) through inline and named fragments', () => {
    expect(operationViolation(parse('{ a { b { c { d } } } }'), LIMITS)).toBeUndefined();
    expect(operationViolation(parse('{ a { b { c { d { e } } } } }'), LIMITS)?.code).toBe('QUERY_TOO_DEEP');
    expect(operationViolation(parse('{ a { ... on A { b { ...F } } } } fragment F on B { c { d { e } } }'), LIMITS)?.code).toBe(
      'QUERY_TOO_DEEP',
    );
  });

  it('counts aliases at every place a fragment is spread', () => {
    expect(operationViolation(parse('{ x: a y: a }'), LIMITS)).toBeUndefined();
    expect(operationViolation(parse('{ a { ...F } b { ...F } } fragment F on T { x: id }'), LIMITS)).toBeUndefined();
    expect(operationViolation(parse('{ a { ...F } b { ...F } c { ...F } } fragment F on T { x: id }'), LIMITS)?.code).toBe(
      'TOO_MANY_ALIASES',
    );
  });

  it('stops on fragment cycles instead of looping (the origin reports them)', () => {
    expect(operationViolation(parse('{ a { ...F } } fragment F on T { b { ...G } } fragment G on T { ...F }'), LIMITS)).toBeUndefined();
  });

  it('answers a fragment bomb with TOO_MANY_ALIASES', () => {
    const bomb = `{ a { ...F0 } } ${Array.from({ length: 30 }, (_, i) => `fragment F${i} on T { x: id ...F${i + 1} ...F${i + 1} }`).join(' ')} fragment F30 on T { id }`;
    expect(operationViolation(parse(bomb), { ...LIMITS, maxAliases: 1000 })?.code).toBe('TOO_MANY_ALIASES');
  });

  it('measures query text in bytes, not characters', () => {
    expect(queryTextViolation('é'.repeat(50), LIMITS)).toBeUndefined();
    expect(queryTextViolation('é'.repeat(51), LIMITS)).toEqual({ message: 'Query is 102 bytes; the limit is 100', code: 'QUERY_TOO_LARGE' });
  });
});
