import { describe, expect, it } from 'vitest';
import { removeMembers, type MemberPlan } from '../../src/invalidation/jsonMembers.js';

/** Removes `drop` from the top-level object and, through `within`, from the objects under those keys, at any depth. */
function planRemoving(drop: string, within: readonly string[] = []): MemberPlan {
  const plan: MemberPlan = {
    removes: (key) => key === drop,
    within: (key) => (within.includes(key) ? plan : undefined),
  };
  return plan;
}

const cut = (json: string, plan: MemberPlan): string => removeMembers(Buffer.from(json), plan).toString();

describe('removeMembers', () => {
  it.each([
    ['first', '{"x":1,"a":2,"b":3}', '{"a":2,"b":3}'],
    ['middle', '{"a":1,"x":2,"b":3}', '{"a":1,"b":3}'],
    ['last', '{"a":1,"b":2,"x":3}', '{"a":1,"b":2}'],
    ['only', '{"x":1}', '{}'],
    ['repeated', '{"x":1,"x":2,"a":3,"x":4,"x":5,"b":6,"x":7}', '{"a":3,"b":6}'],
    ['with an object value', '{"a":1,"x":{"b":[1,{"c":"}"}]}}', '{"a":1}'],
  ])('removes a %s member and the comma that went with it', (_where, json, expected) => {
    expect(cut(json, planRemoving('x'))).toBe(expected);
  });

  it('keeps whitespace of pretty-printed JSON around what stays', () => {
    expect(cut('{\n  "x": 1,\n  "a": 2,\n  "x": 3\n}', planRemoving('x'))).toBe('{\n  "a": 2\n}');
    expect(cut('{ "a" : [ { "x" : true } , { "b" : null , "x" : 1 } ] }', planRemoving('x', ['a']))).toBe(
      '{ "a" : [ {  } , { "b" : null } ] }',
    );
  });

  it('keeps number spellings, escapes and key order that parsing and stringifying would change', () => {
    const json = '{"a":{"big":12345678901234567890,"float":1.0,"exp":1E3,"text":"caf\\u00e9\\/","2":0,"1":0,"x":"y"}}';
    expect(cut(json, planRemoving('x', ['a']))).toBe(
      '{"a":{"big":12345678901234567890,"float":1.0,"exp":1E3,"text":"caf\\u00e9\\/","2":0,"1":0}}',
    );
  });

  it('reads keys written with escapes, and strings holding quotes, backslashes and brackets', () => {
    expect(cut('{"\\u0078":1,"a\\\\":"\\"}{[","b":"\\\\"}', planRemoving('x'))).toBe('{"a\\\\":"\\"}{[","b":"\\\\"}');
  });

  it('goes only where the plan leads', () => {
    expect(cut('{"a":{"x":1},"b":{"x":2},"x":3}', planRemoving('x', ['a']))).toBe('{"a":{},"b":{"x":2}}');
  });

  it('returns the given Buffer when nothing is removed or the text is not a JSON object', () => {
    for (const json of ['{"a":1}', '[{"x":1}]', '"x"', '', '{"x":1', '{"x" 1}', '{"a":1 "x":2}', '{"x":"unterminated}']) {
      const buffer = Buffer.from(json);
      expect(removeMembers(buffer, planRemoving('x'))).toBe(buffer);
    }
  });
});
