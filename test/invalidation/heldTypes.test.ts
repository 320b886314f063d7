import type { GraphQLNamedType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { heldTypes } from '../../src/invalidation/heldTypes.js';
import { connectionSchema } from '../support/connectionOrigin.js';
import { keyFields } from './fixtures.js';

const held = (typeName: string): { all: string[]; listed: string[] } => {
  const { all, listed } = heldTypes(connectionSchema, keyFields, connectionSchema.getType(typeName) as GraphQLNamedType);
  return { all: all.map((type) => type.name), listed: [...listed] };
};

describe('heldTypes', () => {
  it('walks objects without a key down to entities, which it includes but does not walk', () => {
    expect(held('TodoConnection')).toEqual({ all: ['TodoConnection', 'TodoEdge', 'PageInfo', 'Todo'], listed: ['TodoEdge', 'Todo'] });
    expect(held('Node')).toEqual({ all: ['Todo', 'User'], listed: [] });
  });

  it('does not walk a root operation type, and works a type out once per schema and keyFields', () => {
    expect(held('Query')).toEqual({ all: ['Query'], listed: [] });
    const todoEdge = connectionSchema.getType('TodoEdge') as GraphQLNamedType;
    expect(heldTypes(connectionSchema, keyFields, todoEdge)).toBe(heldTypes(connectionSchema, keyFields, todoEdge));
    expect(heldTypes(connectionSchema, { defaults: [], types: {} }, todoEdge).all.map((type) => type.name)).toEqual(['TodoEdge', 'Todo', 'User']);
  });
});
