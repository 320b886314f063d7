import { buildSchema, getNamedType, getNullableType, isListType, type GraphQLNamedType, type GraphQLObjectType, type GraphQLSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { heldTypes, HeldTypesWalk, possibleObjectTypes } from '../../src/invalidation/heldTypes.js';
import { entityKeyField, type KeyFields } from '../../src/invalidation/keyFields.js';
import { listArgumentIndex } from '../../src/invalidation/listArguments.js';
import { connectionSchema } from '../support/connectionOrigin.js';
import { keyFields } from './fixtures.js';

interface Held {
  all: string[];
  listed: string[];
}

/** What a vacancy of the type (not itself in a list) holds, as `HeldTypesWalk` goes through it. */
function held(typeName: string, schema: GraphQLSchema = connectionSchema, keys: KeyFields = keyFields): Held {
  const all = new Set<string>();
  const listed = new Set<string>();
  new HeldTypesWalk((component, below) => {
    for (const type of component.types) (below ? listed : all).add(type.name);
    return true;
  }).walk(heldTypes(schema, keys, schema.getType(typeName)!), false);
  return { all: [...new Set([...all, ...listed])].sort(), listed: [...listed].sort() };
}

/**
 * The walk per type that components replaced, as the reference: each type entered at most once
 * outside any list and once below one.
 */
function walkedOneByOne(schema: GraphQLSchema, keys: KeyFields, typeName: string): Held {
  const roots = new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]);
  const reached = new Set<string>();
  const listed = new Set<string>();
  const pending: Array<readonly [GraphQLObjectType, boolean]> = possibleObjectTypes(schema, schema.getType(typeName)!).map((type) => [type, false]);
  for (const [type, belowList] of pending) {
    if (belowList ? listed.has(type.name) : reached.has(type.name)) continue;
    reached.add(type.name);
    if (belowList) listed.add(type.name);
    if (roots.has(type) || entityKeyField(type, keys) !== undefined) continue;
    for (const field of Object.values(type.getFields())) {
      const inList = belowList || isListType(getNullableType(field.type));
      for (const object of possibleObjectTypes(schema, getNamedType(field.type))) pending.push([object, inList]);
    }
  }
  return { all: [...reached].sort(), listed: [...listed].sort() };
}

/** Seeded: `count` types, an entity every `entityEvery`-th, each with a field and `lists` list fields to random others, some through an interface. */
function randomSchema(count: number, lists: number, entityEvery: number): GraphQLSchema {
  let seed = 7;
  const pick = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) % count;
  const target = (): string => (pick() % 5 === 0 ? `I${pick() % 10}` : `T${pick()}`);
  const types = Array.from({ length: count }, (_, number) => {
    const fields = [...(number % entityEvery === 0 ? ['id: ID'] : []), 'name: String', `one: ${target()}`, ...Array.from({ length: lists }, (_, field) => `f${field}: [${target()}!]!`)];
    const interfaces = number % 3 === 0 ? ` implements I${number % 10}` : '';
    return `type T${number}${interfaces} {\n  ${fields.join('\n  ')}\n}`;
  });
  const interfaces = Array.from({ length: 10 }, (_, number) => `interface I${number} {\n  name: String\n}`);
  return buildSchema([...types, ...interfaces, 'type Query {\n  items: [T0!]!\n}'].join('\n'));
}

describe('heldTypes', () => {
  it('walks objects without a key down to entities, which it includes but does not walk', () => {
    expect(held('TodoConnection')).toEqual({ all: ['PageInfo', 'Todo', 'TodoConnection', 'TodoEdge'], listed: ['Todo', 'TodoEdge'] });
    expect(held('Node')).toEqual({ all: ['Todo', 'User'], listed: [] });
    expect(heldTypes(connectionSchema, keyFields, connectionSchema.getType('TodoConnection')!).entities().map((type) => type.name)).toEqual(['Todo']);
  });

  it('does not walk a root operation type, and works the schema out once per keyFields', () => {
    expect(held('Query')).toEqual({ all: ['Query'], listed: [] });
    const todoEdge = connectionSchema.getType('TodoEdge') as GraphQLNamedType;
    expect(heldTypes(connectionSchema, keyFields, todoEdge)).toBe(heldTypes(connectionSchema, keyFields, todoEdge));
    expect(held('TodoEdge', connectionSchema, { defaults: [], types: {} }).all).toEqual(['Todo', 'TodoEdge', 'User']);
  });

  it('gives types that hold each other one result, listed whole when a list leads around their cycle', () => {
    const schema = buildSchema(`
      type A { b: B, items: [C!]! }
      type B { a: A }
      type C { d: D, e: E, u: U }
      type D { c: C, more: [D!]! }
      type E { id: ID, back: A }
      type F { g: G }
      type G { name: String }
      union U = F | E
      type Query { a: A }
    `);
    const same = (name: string) => heldTypes(schema, keyFields, schema.getType(name)!);
    expect(same('A')).toBe(same('B'));
    expect(same('C')).toBe(same('D'));
    expect(same('C')).not.toBe(same('A'));
    // A and B hold each other outside any list; C and D are below A's list, and hold each other through D's list.
    expect(held('A', schema)).toEqual({ all: ['A', 'B', 'C', 'D', 'E', 'F', 'G'], listed: ['C', 'D', 'E', 'F', 'G'] });
    expect(held('C', schema)).toEqual({ all: ['C', 'D', 'E', 'F', 'G'], listed: ['C', 'D', 'E', 'F', 'G'] });
    expect(held('U', schema)).toEqual({ all: ['E', 'F', 'G'], listed: [] });
    for (const name of ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'U', 'Query']) expect(held(name, schema)).toEqual(walkedOneByOne(schema, keyFields, name));
    expect(same('A').entities().map((type) => type.name)).toEqual(['E']);
  });

  it('holds what the walk of each type on its own held, on a seeded schema of random fields', () => {
    const schema = randomSchema(300, 3, 7);
    for (const name of Object.keys(schema.getTypeMap()).filter((name) => /^[TI]\d/.test(name))) {
      expect(held(name, schema)).toEqual(walkedOneByOne(schema, keyFields, name));
    }
  });

  it('works out a schema of 3,000 key-less types, each with six lists of random others', () => {
    const schema = randomSchema(3000, 6, 3001);
    // Built on the first query's prepare, synchronously: in proportion to the types and fields.
    const lists = listArgumentIndex(schema, { mode: 'match', fields: {} }, keyFields);
    expect(lists.tagsLists(schema.getQueryType()!, schema.getQueryType()!.getFields().items!)).toBe(true);
    for (const name of ['T0', 'T1', 'T1234', 'T2999', 'I3']) expect(held(name, schema)).toEqual(walkedOneByOne(schema, keyFields, name));
  });
});
