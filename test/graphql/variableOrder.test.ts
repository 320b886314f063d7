import { buildSchema, parse, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { readJson } from '../../src/graphql/canonicalVariables.js';
import { variablesKeyText } from '../../src/graphql/variableOrder.js';

const schema = buildSchema(`
  scalar JSON
  enum Color { RED GREEN }
  input Range { from: Int, to: Int, color: Color, next: Range }
  input Raw { label: String, payload: JSON }
  type Query { items(range: Range, ranges: [Range!], raw: Raw, j: JSON, id: ID): [String] }
`);

function keyText(query: string, variables: string): string {
  const operation = parse(query).definitions[0] as OperationDefinitionNode;
  const read = readJson(variables);
  if (typeof read === 'string') throw new Error(read);
  return variablesKeyText({ canonicalVariables: read.canonical(), orderedVariables: read.canonicalInOrder() }, operation, schema);
}

describe('variablesKeyText', () => {
  it('sorts the members of input objects, enums and built-in scalars: origins coerce them field by field', () => {
    const query = 'query ($range: Range, $ranges: [Range!], $id: ID) { items(range: $range, ranges: $ranges, id: $id) }';
    expect(keyText(query, '{"range":{"to":2,"from":1,"next":{"to":4,"from":3}},"id":"x"}')).toBe('{"id":"x","range":{"from":1,"next":{"from":3,"to":4},"to":2}}');
    expect(keyText(query, '{"ranges":[{"to":2,"from":1}]}')).toBe(keyText(query, '{"ranges":[{"from":1,"to":2}]}'));
  });

  it('keeps the order sent where a custom scalar may receive an object, directly or inside an input object', () => {
    expect(keyText('query ($j: JSON) { items(j: $j) }', '{"j":{"b":2,"a":1}}')).toBe('{"j":{"b":2,"a":1}}');
    expect(keyText('query ($raw: Raw) { items(raw: $raw) }', '{"raw":{"payload":{"b":2,"a":1},"label":"x"}}')).toBe('{"raw":{"payload":{"b":2,"a":1},"label":"x"}}');
    expect(keyText('query ($j: [JSON]!) { items(j: $j) }', '{"j":[{"b":2,"a":1}]}')).not.toBe(keyText('query ($j: [JSON]!) { items(j: $j) }', '{"j":[{"a":1,"b":2}]}'));
  });

  it('keeps the order sent for a type the schema lacks, and gives the sorted text when nothing is out of order', () => {
    expect(keyText('query ($x: Missing) { items }', '{"x":{"b":2,"a":1}}')).toBe('{"x":{"b":2,"a":1}}');
    expect(keyText('query ($j: JSON) { items(j: $j) }', '{"j":{"a":1,"b":2}}')).toBe('{"j":{"a":1,"b":2}}');
  });
});
