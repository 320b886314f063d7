import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { parseDocument } from '../../src/graphql/document.js';
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

  // An outside audit: graphql-js's parser overflowed the stack on a few KB nested a few thousand
  // deep, which read as a syntax error, and the request went on unchecked.
  describe('brackets nested in the text, before it is parsed', () => {
    const TEXT_LIMITS = { maxQueryBytes: 1_000_000, maxDepth: 25, maxAliases: 50 };
    const TOO_DEEP = { message: 'Query nests brackets ({, [, () more than 104 deep, the limit', code: 'QUERY_TOO_DEEP' };
    const nested = (open: string, close: string, levels: number) => `{ a(x: ${open.repeat(levels)}1${close.repeat(levels)}) }`;

    it('counts braces, square brackets and parentheses together, up to twice the selection sets\' limit', () => {
      // `{ a(x: ` opens two before the value's own.
      expect(queryTextViolation(nested('[', ']', 102), TEXT_LIMITS)).toBeUndefined();
      expect(queryTextViolation(nested('[', ']', 103), TEXT_LIMITS)).toEqual(TOO_DEEP);
      expect(queryTextViolation(nested('{a:', '}', 103), TEXT_LIMITS)).toEqual(TOO_DEEP);
      expect(queryTextViolation(`${'{ q '.repeat(105)}${'}'.repeat(105)}`, TEXT_LIMITS)).toEqual(TOO_DEEP);
      expect(queryTextViolation(`query Q(${'$v: ['.repeat(60)}Int${']'.repeat(60)}) ${'{ q '.repeat(50)}${'}'.repeat(50)}`, TEXT_LIMITS)).toBeUndefined();
      expect(queryTextViolation(nested('[', ']', 103), { ...TEXT_LIMITS, maxDepth: 60 })).toBeUndefined();
      expect(queryTextViolation(nested('[', ']', 63), { ...TEXT_LIMITS, maxDepth: 3 })).toMatchObject({ message: 'Query nests brackets ({, [, () more than 64 deep, the limit' });
      expect(queryTextViolation(nested('[', ']', 3_000), TEXT_LIMITS)).toEqual(TOO_DEEP);
    });

    // A review: the scan ran on every HIT, 24 µs for a 5 KB query; a text parsed before is not scanned again.
    it('reads the nesting of a text parsed before from its parse', () => {
      const text = `{ a(x: ${'['.repeat(103)}1${']'.repeat(103)}) }`;
      expect(parseDocument(text)).toMatchObject({ brackets: 105 });
      expect(queryTextViolation(text, TEXT_LIMITS)).toEqual(TOO_DEEP);
      expect(queryTextViolation(text, { ...TEXT_LIMITS, maxDepth: 60 })).toBeUndefined();
    });

    it('counts none in strings, block strings and comments', () => {
      const within = (text: string) => queryTextViolation(`{ a(x: ${text}) }`, TEXT_LIMITS);
      expect(within(`"${'['.repeat(200)} \\" ${'{'.repeat(200)}"`)).toBeUndefined();
      expect(within(`"""${'['.repeat(200)} \\""" ${'('.repeat(200)}"""`)).toBeUndefined();
      expect(within(`1 # ${'{'.repeat(200)}\n`)).toBeUndefined();
      expect(within(`1 # ${'{'.repeat(200)}\r`)).toBeUndefined();
      // A string ends at its line, as the lexer ends it: what follows counts.
      expect(within(`"${'['.repeat(10)}\n${'['.repeat(200)}`)).toEqual(TOO_DEEP);
      expect(within(`"\\\\" ${'['.repeat(200)}`)).toEqual(TOO_DEEP);
    });
  });
});
