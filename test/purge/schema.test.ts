import { buildSchema, printSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { entityKeyText } from '../../src/invalidation/keyFields.js';
import { buildPurgeSchema, derivePurgeApi, warnOmittedPurgeFields } from '../../src/purge/index.js';
import { recordingLogger } from '../support/recordingLogger.js';
import { demoSchemaSDL } from '../support/origin.js';

const origin = buildSchema(demoSchemaSDL);
const KEY_FIELDS = { defaults: ['id', '_id'], types: { Product: ['sku'] } };

describe('buildPurgeSchema', () => {
  it('derives the purge API from the demo schema', () => {
    expect(printSchema(buildPurgeSchema(origin, KEY_FIELDS))).toBe(`"""GraphQL requires a Query type; the purge API is its mutations."""
type Query {
  """Always true."""
  _purgeApi: Boolean!
}

"""
svc-cache purge API: each field answers true once the cache has dropped what it names.
"""
type Mutation {
  """Invalidates every cached response."""
  _purgeAll(
    """Mark stale (served within swr while refreshed) instead of removing."""
    soft: Boolean = false
  ): Boolean!

  """
  Invalidates the cached results of queries that select any of these root query fields.
  """
  _purgeQuery(
    queries: [QueryField!]!

    """Mark stale (served within swr while refreshed) instead of removing."""
    soft: Boolean = false
  ): Boolean!

  """Invalidates the cached results of operations with any of these names."""
  _purgeOperationName(
    names: [String!]!

    """Mark stale (served within swr while refreshed) instead of removing."""
    soft: Boolean = false
  ): Boolean!

  """
  Invalidates every cached response that contains an object of this type, or with keyFields, those whose key field has one of these values.
  """
  _purgeType(
    type: String!
    keyFields: [KeyFieldInput!]

    """Mark stale (served within swr while refreshed) instead of removing."""
    soft: Boolean = false
  ): Boolean!

  """Invalidates every cached response that contains any Product."""
  _purgeProduct(
    """Mark stale (served within swr while refreshed) instead of removing."""
    soft: Boolean = false
  ): Boolean!

  """
  Invalidates the cached responses that contain the Product with these sku values, or any Product when sku is left out.
  """
  purgeProduct(
    sku: [String!]

    """Mark stale (served within swr while refreshed) instead of removing."""
    soft: Boolean = false
  ): Boolean!

  """Invalidates every cached response that contains any Todo."""
  _purgeTodo(
    """Mark stale (served within swr while refreshed) instead of removing."""
    soft: Boolean = false
  ): Boolean!

  """
  Invalidates the cached responses that contain the Todo with these id values, or any Todo when id is left out.
  """
  purgeTodo(
    id: [ID!]

    """Mark stale (served within swr while refreshed) instead of removing."""
    soft: Boolean = false
  ): Boolean!

  """Invalidates every cached response that contains any User."""
  _purgeUser(
    """Mark stale (served within swr while refreshed) instead of removing."""
    soft: Boolean = false
  ): Boolean!

  """
  Invalidates the cached responses that contain the User with these id values, or any User when id is left out.
  """
  purgeUser(
    id: [ID!]

    """Mark stale (served within swr while refreshed) instead of removing."""
    soft: Boolean = false
  ): Boolean!
}

"""A root field of the origin's Query type."""
enum QueryField {
  todos
  todo
  users
  user
  me
  products
  product
  node
  search
  time
}

"""
A key field of an object and one value of it, as Stellate's _purgeType takes them.
"""
input KeyFieldInput {
  name: String!
  value: String!
}`);
    expect(derivePurgeApi(origin, KEY_FIELDS).omitted).toEqual([]);
  });

  it('is derived once per origin schema and keyFields', () => {
    const first = buildPurgeSchema(origin, KEY_FIELDS);
    expect(buildPurgeSchema(origin, { defaults: ['id', '_id'], types: { Product: ['sku'] } })).toBe(first);
    expect(buildPurgeSchema(origin, { defaults: ['id'], types: {} })).not.toBe(first);
    expect(buildPurgeSchema(buildSchema(demoSchemaSDL), KEY_FIELDS)).not.toBe(first);
  });

  it('gives a type without a key field only _purge<Type>', () => {
    const fields = buildPurgeSchema(origin, { defaults: ['id'], types: {} }).getMutationType()!.getFields();
    expect(Object.keys(fields).filter((name) => name.endsWith('Product'))).toEqual(['_purgeProduct']);
  });

  it('leaves out purge fields the origin Mutation type already has, and says so', () => {
    const colliding = buildSchema(`
      type Todo { id: ID! }
      type Query { todos: [Todo!]! }
      type Mutation { purgeTodo(id: ID!): Todo _purgeAll: Boolean }
    `);
    const api = derivePurgeApi(colliding, KEY_FIELDS);
    expect([...api.mutationFields]).toEqual(['_purgeQuery', '_purgeOperationName', '_purgeType', '_purgeTodo']);
    expect(api.omitted).toEqual([
      { field: '_purgeAll', reason: "the origin's Mutation type has a field _purgeAll; requests for it go to the origin" },
      { field: 'purgeTodo', reason: "the origin's Mutation type has a field purgeTodo; requests for it go to the origin" },
    ]);
  });

  it('warns of each purge field the origin\'s own mutations keep from the purge API', () => {
    const colliding = buildSchema('type Todo { id: ID! } type Query { todos: [Todo!]! } type Mutation { purgeTodo(id: ID!): Boolean }');
    const { logger, messages } = recordingLogger();
    warnOmittedPurgeFields(colliding, KEY_FIELDS, logger);
    expect(messages).toEqual([
      "purge field purgeTodo is not offered: the origin's Mutation type has a field purgeTodo; requests for it go to the origin",
    ]);
  });

  it('types key arguments as the origin key field, copying custom scalars and enums', () => {
    const api = derivePurgeApi(
      buildSchema(`
        scalar UUID
        enum Region { EU US }
        type Order { ref: UUID! }
        type Shop { region: Region! }
        type Seat { number: Int! }
        type Tag { id: [ID!]! }
        type Page { id(format: String!): ID! }
        type All { id: ID! }
        type Query { orders: [Order!]! shops: [Shop!]! seats: [Seat!]! tags: [Tag!]! pages: [Page!]! all: [All!]! true: Boolean }
      `),
      { defaults: ['id'], types: { Order: ['ref'], Shop: ['region'], Seat: ['number'] } },
    );
    const printed = printSchema(api.schema);
    const mutation = api.schema.getMutationType()!.getFields();
    const argumentsOf = (field: string) => mutation[field]!.args.map((argument) => `${argument.name}: ${String(argument.type)}`);
    expect(argumentsOf('purgeOrder')).toEqual(['ref: [UUID!]', 'soft: Boolean']);
    expect(argumentsOf('purgeShop')).toEqual(['region: [Region!]', 'soft: Boolean']);
    expect(argumentsOf('purgeSeat')).toEqual(['number: [Int!]', 'soft: Boolean']);
    expect(printed).toContain('scalar UUID');
    expect(printed).toContain('enum Region {\n  EU\n  US\n}');
    expect(api.omitted).toEqual([
      {
        field: '_purgeQuery(queries: true)',
        reason: 'GraphQL does not allow it as an enum value; purge its results with _purgeOperationName or _purge<Type>',
      },
      { field: '_purgeAll', reason: 'the built-in purge field of that name takes precedence' },
      {
        field: 'purgePage',
        reason:
          'its key field Page.id: ID! cannot identify objects (it must be a scalar or an enum and take no required argument)',
      },
      {
        field: 'purgeTag',
        reason:
          'its key field Tag.id: [ID!]! cannot identify objects (it must be a scalar or an enum and take no required argument)',
      },
    ]);
  });
});

describe('entityKeyText', () => {
  it('spells key values as a serialised response does', () => {
    expect(entityKeyText('sku-1')).toBe('sku-1');
    expect(entityKeyText(42)).toBe('42');
    expect(entityKeyText(true)).toBe('true');
    expect(entityKeyText({ b: 1, a: 2 })).toBe('{"a":2,"b":1}');
  });
});
