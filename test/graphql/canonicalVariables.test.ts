import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJsonText, readJson, readJsonBytes } from '../../src/graphql/canonicalVariables.js';

const canonical = (text: string) => canonicalJsonText(text);

/**
 * A JSON value written with whitespace where a choice says so and each object's members in a
 * shuffled order, and the same order without whitespace, as JSON.stringify would spell it.
 */
function written(value: unknown, choices: () => number): [sent: string, inOrder: string] {
  const space = () => [' ', '', '\n ', '\t', ''][choices() % 5]!;
  if (Array.isArray(value)) {
    const elements = value.map((element) => written(element, choices));
    return [`[${space()}${elements.map(([text]) => text + space()).join(`,${space()}`)}]`, `[${elements.map(([, text]) => text).join(',')}]`];
  }
  if (typeof value !== 'object' || value === null) return [JSON.stringify(value), JSON.stringify(value)];
  const keys = Object.keys(value).sort((a, b) => (choices() % 3) - 1 || (a < b ? -1 : 1));
  const members = keys.map((key) => [JSON.stringify(key), written((value as Record<string, unknown>)[key], choices)] as const);
  return [
    `{${space()}${members.map(([key, [text]]) => `${key}${space()}:${space()}${text}`).join(`,${space()}`)}${space()}}`,
    `{${members.map(([key, [, text]]) => `${key}:${text}`).join(',')}}`,
  ];
}

describe('canonicalJsonText', () => {
  it.each([
    ['{"b":2,"a":1}', '{"a":1,"b":2}'],
    [' { "a" : [ 1 , { "d" : null , "c" : true } ] } ', '{"a":[1,{"c":true,"d":null}]}'],
    ['{"\\u0061":"\\u00e9\\n\\/"}', '{"a":"é\\n/"}'],
    ['"\\ud800"', '"\\ud800"'],
    ['"\\uD83D\\uDE00"', '"😀"'],
    ['"\\u001f"', '"\\u001f"'],
    ['{}', '{}'],
    ['[]', '[]'],
    ['[ ]', '[]'],
    ['{ }', '{}'],
    ['false', 'false'],
    ['-0', '-0'],
    ['{"a":1,"a":1}', '{"a":1}'],
    ['{"aa":1,"a":2,"b":3,"":4}', '{"":4,"a":2,"aa":1,"b":3}'],
  ])('%j is %j', (text, expected) => {
    expect(canonical(text)).toEqual({ ok: true, text: expected });
  });

  it('keeps every number exactly as written', () => {
    for (const number of ['1', '1.0', '1e0', '1E+0', '10e-1', '9007199254740993', '9007199254740992', '-0.0', '1.5e300', '123456789012345678901234567890']) {
      expect(canonical(`{"n":${number}}`)).toEqual({ ok: true, text: `{"n":${number}}` });
    }
    expect(canonical('{"n":1}')).not.toEqual(canonical('{"n":1.0}'));
  });

  it('one spelling of a string, whatever its escapes', () => {
    const forms = ['"a\\/é"', '"\\u0061/\\u00E9"', '"a\\u002f\\u00e9"'];
    expect(new Set(forms.map((form) => JSON.stringify(canonical(form))))).toEqual(new Set([JSON.stringify({ ok: true, text: '"a/é"' })]));
  });

  it.each([
    '',
    ' ',
    '{',
    '}',
    '{"a":1,}',
    '[1,]',
    '[,1]',
    '{"a" 1}',
    '{a:1}',
    "{'a':1}",
    '{"a":01}',
    '{"a":1.}',
    '{"a":.5}',
    '{"a":+1}',
    '{"a":1e}',
    '{"a":NaN}',
    '{"a":Infinity}',
    '{"a":tru}',
    '{"a":"\\x"}',
    '{"a":"\\u12"}',
    '{"a":"tab\there"}',
    '{"a":"unterminated}',
    '{"a":1}{}',
    '{"a":1} x',
    '[1 2]',
    '\ufeff{}',
    '{"a":1]',
    '[1}',
  ])('%j is invalid', (text) => {
    expect(canonical(text)).toEqual({ ok: false, error: 'invalid-json' });
  });

  it.each([
    // Only a nested container differs from its canonical text: it is rewritten, and so is what holds it.
    ['{"x":[ [ 1 ] ]}', '{"x":[[1]]}'],
    ['[{"b":1,"a":2}]', '[{"a":2,"b":1}]'],
    ['{"a":{"b":0,"a":1}}', '{"a":{"a":1,"b":0}}'],
    ['[["\\u0061"],1]', '[["a"],1]'],
    ['{"k" :1}', '{"k":1}'],
    ['{"k": 1}', '{"k":1}'],
    ['[["\ud800"]]', '[["\\ud800"]]'],
    ['["\ud83d\ude00"]', '["\ud83d\ude00"]'],
    ['{"a":[1, 2],"a":[1,2]}', '{"a":[1,2]}'],
  ])('%j is %j', (text, expected) => {
    expect(canonical(text)).toEqual({ ok: true, text: expected });
  });

  it('is JSON.stringify of the value with its keys sorted, whatever whitespace and member order it is sent with', () => {
    // Written out by hand: an object puts integer-like keys first whatever order they are set in.
    const sortedText = (value: unknown): string =>
      Array.isArray(value)
        ? `[${value.map(sortedText).join(',')}]`
        : typeof value === 'object' && value !== null
          ? `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${sortedText((value as Record<string, unknown>)[key])}`).join(',')}}`
          : JSON.stringify(value);
    fc.assert(
      fc.property(fc.jsonValue(), fc.infiniteStream(fc.nat()), (value, stream) => {
        const choices = stream[Symbol.iterator]();
        const [text] = written(value, () => choices.next().value as number);
        expect(canonical(text)).toEqual({ ok: true, text: sortedText(value) });
      }),
      { numRuns: 500 },
    );
  });

  it.each(['{"a":1,"a":2}', '{"a":{"y":1,"x":2},"a":{"x":2,"y":1}}', '{"a":1,"b":0,"a":"1"}', '{"x":[{"k":true,"k":false}]}', '{"\\u0061":1,"a":2}', '{"a":[1,2],"a":[1,2,3]}', '{"a":"x","a":[[[[1]]]]}'])(
    '%j names one key with two values: ambiguous',
    (text) => {
      expect(canonical(text)).toEqual({ ok: false, error: 'ambiguous' });
    },
  );

  it('reads deep nesting without exhausting the stack, in time linear in its size', () => {
    const depth = 200_000;
    const text = `${'['.repeat(depth)}1${']'.repeat(depth)}`;
    expect(canonical(text)).toEqual({ ok: true, text });
    const objects = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    expect(canonical(objects)).toEqual({ ok: true, text: objects });
    expect(canonical(`${'['.repeat(depth)}1`)).toEqual({ ok: false, error: 'invalid-json' });
  });
});

describe('canonicalInOrder', () => {
  const inOrder = (text: string): string => {
    const value = readJson(text);
    if (typeof value === 'string') throw new Error(value);
    return value.canonicalInOrder();
  };

  it.each([
    ['{"b":2,"a":1}', '{"b":2,"a":1}'],
    [' { "a" : [ 1 , { "d" : null , "c" : true } ] } ', '{"a":[1,{"d":null,"c":true}]}'],
    ['{"b":{"\\u0061":1},"b":{"a":1},"a":[]}', '{"b":{"a":1},"a":[]}'],
    ['{"a":1,"b":2}', '{"a":1,"b":2}'],
  ])('%j is %j: members in the order sent, as a custom scalar receives them', (text, expected) => {
    expect(inOrder(text)).toBe(expected);
  });

  it('is the canonical text with each object\'s members where they were sent, whatever whitespace', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.infiniteStream(fc.nat()), (value, stream) => {
        const choices = stream[Symbol.iterator]();
        const [text, expected] = written(value, () => choices.next().value as number);
        expect(inOrder(text)).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });
});

describe('readJson', () => {
  it('gives each member its raw text, its decoded string and its canonical text', () => {
    const value = readJson('{ "query" : "{ me }", "variables": {"b": 1.0, "a": "\\u0061"}, "n": null }');
    if (typeof value === 'string') throw new Error(value);
    expect(value.kind).toBe('object');
    expect([...value.members!.keys()]).toEqual(['n', 'query', 'variables']);
    expect(value.members!.get('query')!.string).toBe('{ me }');
    expect(value.members!.get('query')!.raw).toBe('"{ me }"');
    expect(value.members!.get('variables')!.raw).toBe('{"b": 1.0, "a": "\\u0061"}');
    expect(value.members!.get('variables')!.canonical()).toBe('{"a":"a","b":1.0}');
    expect(value.members!.get('variables')!.members!.get('b')!.kind).toBe('number');
    expect(value.members!.get('n')!.kind).toBe('null');
  });

  it('gives an array its elements', () => {
    const value = readJson('[{"query":"a"}, {"query":"b"}]');
    if (typeof value === 'string') throw new Error(value);
    expect(value.kind).toBe('array');
    expect(value.elements!.map((element) => element.members!.get('query')!.string)).toEqual(['a', 'b']);
    expect(value.elements![1]!.raw).toBe('{"query":"b"}');
  });
});

describe('readJsonBytes', () => {
  it('reads UTF-8', () => {
    const value = readJsonBytes(Buffer.from('{"a":"é"}'));
    expect(typeof value === 'string' ? value : value.canonical()).toBe('{"a":"é"}');
  });

  it.each([
    [Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])],
    [Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x22, 0x7d])],
    [Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22])],
  ])('refuses bytes that are not UTF-8 rather than replacing them (%#)', (bytes) => {
    expect(readJsonBytes(bytes)).toBe('invalid-utf8');
  });

  it('keeps a byte-order mark, which makes the body invalid JSON', () => {
    expect(readJsonBytes(Buffer.from('\ufeff{}'))).toBe('invalid-json');
  });
});
