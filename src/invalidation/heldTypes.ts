import {
  getNamedType,
  getNullableType,
  isAbstractType,
  isListType,
  isObjectType,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql';
import { getOrInsertComputed } from '../util/index.js';
import { entityKeyField, type KeyFields } from './keyFields.js';

/**
 * What a place of a type in an answer could hold (README, Invalidation after mutations: a field
 * that came back `null` or empty is tagged with the types it could have held): its possible object
 * types and, below each one without a key field, what that one's fields could hold in turn (a
 * connection's edges, their nodes, its page info), down to entity types. An entity type is
 * included but not walked: what it holds is named by its own tags once it is there. A root
 * operation type is not walked either: a field holding one (a Relay payload's `query: Query`)
 * re-enters the whole schema, and is `null` only with `errors`, in an answer that is not stored.
 */
export interface HeldTypes {
  /** Every object type the place could hold, its own possible types first. */
  readonly all: readonly GraphQLObjectType[];
  /** Names of those it could hold below a list inside it (a connection's edges and nodes). */
  readonly listed: ReadonlySet<string>;
}

/** Worked out once per schema, `keyFields` and type: a walk of the schema, not of an answer. */
export function heldTypes(schema: GraphQLSchema, keyFields: KeyFields, type: GraphQLNamedType): HeldTypes {
  const byKeyFields = getOrInsertComputed(heldBySchema, schema, () => new WeakMap<KeyFields, Map<string, HeldTypes>>());
  const byType = getOrInsertComputed(byKeyFields, keyFields, () => new Map<string, HeldTypes>());
  return getOrInsertComputed(byType, type.name, () => walkHeldTypes(schema, keyFields, type));
}

const heldBySchema = new WeakMap<GraphQLSchema, WeakMap<KeyFields, Map<string, HeldTypes>>>();

/** The object types of a place of `type`: itself, or an interface's or union's possible types. */
export function possibleObjectTypes(schema: GraphQLSchema, type: GraphQLNamedType): readonly GraphQLObjectType[] {
  if (isObjectType(type)) return [type];
  return isAbstractType(type) ? schema.getPossibleTypes(type) : [];
}

/**
 * Each type is entered at most twice, once outside any list and once below one, so a type that
 * holds itself (a tree of key-less nodes) ends the walk.
 */
function walkHeldTypes(schema: GraphQLSchema, keyFields: KeyFields, type: GraphQLNamedType): HeldTypes {
  const roots = new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]);
  const reached = new Map<string, GraphQLObjectType>();
  const listed = new Set<string>();
  // Grows while it is walked: for...of reads what is pushed meanwhile.
  const pending: Array<[GraphQLObjectType, boolean]> = possibleObjectTypes(schema, type).map((objectType) => [objectType, false]);
  for (const [objectType, belowList] of pending) {
    if (belowList ? listed.has(objectType.name) : reached.has(objectType.name)) continue;
    reached.set(objectType.name, objectType);
    if (belowList) listed.add(objectType.name);
    if (roots.has(objectType) || entityKeyField(objectType, keyFields) !== undefined) continue;
    for (const field of Object.values(objectType.getFields())) {
      const inList = belowList || isListType(getNullableType(field.type));
      for (const held of possibleObjectTypes(schema, getNamedType(field.type))) pending.push([held, inList]);
    }
  }
  return { all: [...reached.values()], listed };
}
