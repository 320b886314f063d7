import {
  getNamedType,
  getNullableType,
  isCompositeType,
  isListType,
  isObjectType,
  getVariableValues,
  type FieldNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLObjectType,
  type OperationDefinitionNode,
  type GraphQLOutputType,
  type GraphQLSchema,
} from 'graphql';
import { entityKeyText } from './keyFields.js';
import type { PreparedOperation } from './entityFields.js';
import { lookedUpEntityTags } from './keyedLookups.js';
import { heldTypes, HeldTypesWalk, possibleObjectTypes, type HeldTypes } from './heldTypes.js';
import { queriedTypes } from './queriedTypes.js';
import { rootFieldTypeTags } from './rootFieldTypes.js';
import { entityKeyField, type KeyFields } from './keyFields.js';
import type { ListArgumentIndex } from './listArguments.js';
import { fragmentsFor, operationPlan, type SelectionPlan } from './selectionPlan.js';
import { isRelayConnection, isRelayPage } from './relayTypes.js';
import { invalidationTag } from './tags.js';
import { isPlainObject } from '../util/index.js';

/**
 * Past this many distinct tags a response is not worth storing: each tag is an index entry in the
 * store, and a response naming more objects than this would cost more to index and to invalidate
 * than fetching it again. Dropping some tags instead would leave the entry stale after the purge of
 * an entity it holds, so `responseTags` gives up rather than under-tags.
 */
export const MAX_RESPONSE_TAGS = 10_000;

/**
 * Past this many entity (or list) tags a request's mutations invalidate by type instead: each tag
 * invalidated is a record in every shard of the store for as long as the race guard needs it
 * (README, Redis memory), so a request naming tens of thousands of objects (one bulk mutation, or
 * a batch of a hundred) would cost the store hundreds of megabytes. Shared by the mutations of a batch.
 */
export const MAX_INVALIDATED_ENTITIES = 1_000;

import type { MutationPolicy } from '../config/index.js';

export type { MutationPolicy };

/**
 * The invalidation tags of a query's response (the rewritten operation's, before stripping):
 * - `entity` for each object with a key, under its concrete `__typename`, and `unkeyed` for an
 *   entity type's object without its key (in the answer to a stored document, which went to the
 *   origin without added key fields), which every entity tag of its type also names;
 * - `type` for each object type present, and `list` for each type present as a list element;
 * - for a field that came back `null` or as an empty list, `type` (and `list` for a list field, or
 *   one below a list in it) of every object type it could have held, through objects without a key
 *   down to entities (heldTypes.ts), so that "nothing yet" is invalidated when one appears; and
 *   for a `null` asked for by key (`todo(id: "4")`), `entity` of the key it was asked for
 *   (keyedLookups.ts), which the mutation that creates it and a purge by key name;
 * - `query` for each root field (its schema name, not its alias), `operation` for a named operation;
 * - with `prepared.lists`, `listField` for each list field present (also `null`), per object type it
 *   can hold, with its narrowing arguments' values read with `variables` (listArguments.ts).
 * Undefined when the response cannot be tagged completely, so must not be stored: it names more
 * than `maxTags` distinct tags, or holds an object whose type the schema does not know (the origin
 * has a newer schema, or an abstract field's object came without `__typename`) or objects under a
 * field it does not have, whose entities would go untagged.
 */
export function responseTags(
  schema: GraphQLSchema,
  prepared: PreparedOperation,
  result: unknown,
  operationName: string,
  variables: Record<string, unknown> = {},
  maxTags: number = MAX_RESPONSE_TAGS,
): string[] | undefined {
  const tags = new Set<string>();
  if (operationName) tags.add(invalidationTag.operation(operationName));
  const operation = operationPlan(prepared);
  const root = operation && schema.getRootType(operation.operation.operation);
  if (!operation || !root) return [...tags];
  for (const fields of operation.plan.fields(fragmentsFor(schema, root)).values()) {
    const name = fields[0]!.name.value;
    if (!name.startsWith('__')) tags.add(invalidationTag.query(name));
  }
  const { lists } = prepared;
  let coerced: Record<string, unknown> | undefined | null = null;
  /** The variables' coerced values, read once per answer, and only for an answer that needs them. */
  const coercedOnce = (): Record<string, unknown> | undefined => (coerced === null ? (coerced = coercedVariables(schema, operation.operation, variables)) : coerced);
  /**
   * Null fields already tagged, per field definition (the same node under an interface may be
   * another type's field): a list of 1,000 items each with the same null lookup reads its arguments once.
   */
  const taggedLookups = new Map<FieldNode, Set<GraphQLField<unknown, unknown>>>();
  /** Parent types each list field was tagged under: a field's tags are the same wherever it occurs. */
  const taggedLists = new Map<FieldNode, Set<string>>();
  // Each vacancy's types once per answer: a list of 1,000 items each with a `null` field costs a lookup per item.
  const vacancies = new HeldTypesWalk((held, listed) => {
    for (const tag of held.typeTags) tags.add(tag);
    if (listed) for (const tag of held.listTags) tags.add(tag);
    return tags.size <= maxTags;
  });
  const complete = walkResponse(schema, prepared, result, {
    listField(parent, definition, node) {
      if (!lists) return true;
      let parents = taggedLists.get(node);
      if (!parents) taggedLists.set(node, (parents = new Set()));
      if (parents.has(parent.name)) return true;
      parents.add(parent.name);
      for (const tag of lists.entryTags(parent, definition, node, coercedOnce())) tags.add(tag);
      return tags.size <= maxTags;
    },
    object(type, key, inList) {
      tags.add(invalidationTag.type(type.name));
      if (inList) tags.add(invalidationTag.list(type.name));
      if (key !== undefined) tags.add(invalidationTag.entity(type.name, key));
      return tags.size <= maxTags;
    },
    nullField(definition, node) {
      let definitions = taggedLookups.get(node);
      if (!definitions) taggedLookups.set(node, (definitions = new Set()));
      if (definitions.has(definition)) return true;
      definitions.add(definition);
      for (const tag of lookedUpEntityTags(schema, definition, node, coercedOnce(), prepared.keyFields)) tags.add(tag);
      return tags.size <= maxTags;
    },
    vacancy: (held, list) => vacancies.walk(held, list),
    unidentified: () => false,
    unknownField: () => false,
    keyMissing(type) {
      // Only where the schema validated the document (so svc-cache would have added the key): otherwise
      // the schema is not the origin's, and the walk may have missed or mistyped what the answer holds.
      if (!prepared.rewritten) return false;
      tags.add(invalidationTag.unkeyed(type.name));
      return tags.size <= maxTags;
    },
    summarised(entities) {
      // A count or cursors of a connection change with its entities, which the answer does not
      // name: it holds them as objects without their key do (README, Objects no key names).
      for (const entity of entities) tags.add(invalidationTag.type(entity.name)).add(invalidationTag.unkeyed(entity.name));
      return tags.size <= maxTags;
    },
  });
  return complete && tags.size <= maxTags ? [...tags] : undefined;
}

/**
 * What a mutation's response invalidates under `policy`, from every object it returned: `Entity`
 * the returned entities (and the `unkeyed` objects of their types); `List` those and every list of
 * a returned type (with `prepared.lists` matching, only the lists each object is compatible with,
 * by its field values: listArguments.ts, unless the answer has errors); `Type` every response
 * holding an object of a returned type (its entities and lists included). An object the mutation
 * created touches no list under `Entity` (docs/graphql-caching.md, Invalidation).
 *
 * Where the tags cannot be precise, broader ones stand in: invalidating more than asked is safe,
 * less is not. Beyond `maxEntities` returned entities (MAX_INVALIDATED_ENTITIES), their tags give
 * way to the `type` tags of their types; an object whose type the schema does not know invalidates every type it could be,
 * objects where the schema has none every type queries hold, and an entity that came back without
 * its key, its type.
 */
export function mutationInvalidationTags(
  schema: GraphQLSchema,
  prepared: PreparedOperation,
  result: unknown,
  policy: MutationPolicy,
  maxEntities: number = MAX_INVALIDATED_ENTITIES,
): string[] {
  if (policy === 'None') return [];
  const entities = new Set<string>();
  let tooMany = false;
  const returnedTypes = new Set<string>();
  const entityTypes = new Set<string>();
  /** Types invalidated whole because their objects could not be named precisely. */
  const unnamedTypes = new Set<string>();
  let everyQueriedType = false;
  // With errors, a value may be null because its field failed, not because the object has none:
  // the mutation may have run, and changed objects the answer no longer names (a non-null field
  // that failed after the write nulls its parent, up to `data`). Such a place invalidates the
  // types it could have held (README, Invalidation after mutations).
  const trusted = !isPlainObject(result) || result.errors === undefined;
  if (!trusted && !isPlainObject((result as { data?: unknown }).data)) return rootFieldTypeTags(schema, prepared);
  const lists = policy === 'List' && prepared.lists?.matching && trusted ? new ReturnedLists(prepared.lists, prepared.keyFields, maxEntities) : undefined;
  const vacancies = new HeldTypesWalk((held) => {
    for (const type of held.types) unnamedTypes.add(type.name);
    return true;
  });
  walkResponse(schema, prepared, result, {
    object(type, key, _inList, value, place) {
      returnedTypes.add(type.name);
      lists?.add(type, value);
      if (key !== undefined) {
        entityTypes.add(type.name);
        const tag = invalidationTag.entity(type.name, key);
        if (entities.size < maxEntities || entities.has(tag)) entities.add(tag);
        else tooMany = true;
      } else if (place !== 'inside' && queriedTypes(schema).has(type.name) && !(place === 'payload' && isRelayPage(type))) {
        // What the mutation returns and no key names, of a type queries hold (a viewer's settings,
        // a note), itself or inside a payload no query holds: no narrower tag names the answers
        // holding it. A payload's edge or connection, and key-less objects inside others (page
        // info, values inside an entity), are left to their entity or list (README, Objects no key
        // names).
        unnamedTypes.add(type.name);
      }
      return true;
    },
    vacancy: (held) => trusted || vacancies.walk(held, false),
    unidentified(types) {
      for (const type of types) unnamedTypes.add(type.name);
      return true;
    },
    unknownField() {
      // Once per answer: every object under a drifted field would add the same types again.
      if (!everyQueriedType) for (const type of queriedTypes(schema)) unnamedTypes.add(type);
      everyQueriedType = true;
      return true;
    },
    keyMissing(type) {
      unnamedTypes.add(type.name);
      return true;
    },
  });
  const unnamedTags = [...unnamedTypes].map(invalidationTag.type);
  if (policy === 'Type') return [...new Set([...[...returnedTypes].map(invalidationTag.type), ...unnamedTags])];
  const entityTags = returnedEntityTags(entities, entityTypes, tooMany);
  const listTags = policy !== 'List' ? [] : lists ? lists.tags() : [...returnedTypes].map(invalidationTag.list);
  return [...new Set([...entityTags, ...listTags, ...unnamedTags])];
}

/**
 * The returned entities' tags, and those of their types' objects whose key an answer lacks (any of
 * which may be one of them); when there were too many to name, their types' tags instead.
 */
function returnedEntityTags(entities: ReadonlySet<string>, entityTypes: ReadonlySet<string>, tooMany: boolean): string[] {
  if (tooMany) return [...entityTypes].map(invalidationTag.type);
  return [...entities, ...[...entityTypes].map(invalidationTag.unkeyed)];
}

/**
 * The list tags of a mutation's returned objects under `listArguments.mode: match`: per object,
 * those of the lists it could belong to; for a type one of whose objects lacks a value they need
 * (the answer was not rewritten, as in a batch), or past `maxTags`, every list of the type.
 * A type without a key field always names every list of it: its objects carry no entity tag, so a
 * list that held the object before the mutation changed the values it was listed by (the old
 * values, which the answer no longer shows) is named by nothing else.
 */
class ReturnedLists {
  private readonly named = new Set<string>();
  private readonly wholeTypes = new Set<string>();

  constructor(
    private readonly lists: ListArgumentIndex,
    private readonly keyFields: KeyFields,
    private readonly maxTags: number,
  ) {}

  add(type: GraphQLObjectType, value: (field: string) => unknown): void {
    if (this.wholeTypes.has(type.name)) return;
    const tags = entityKeyField(type, this.keyFields) === undefined ? undefined : this.lists.mutationTags(type, value);
    if (tags === undefined || this.named.size + tags.length > this.maxTags) this.wholeTypes.add(type.name);
    else for (const tag of tags) this.named.add(tag);
  }

  tags(): string[] {
    return [...this.named, ...[...this.wholeTypes].map(invalidationTag.list)];
  }
}

/** The operation's variable values as its arguments read them, or undefined when they do not coerce. */
function coercedVariables(schema: GraphQLSchema, operation: OperationDefinitionNode, variables: Record<string, unknown>): Record<string, unknown> | undefined {
  const values = getVariableValues(schema, operation.variableDefinitions ?? [], variables);
  return 'coerced' in values ? values.coerced : undefined;
}

/**
 * Where an object is: a root field's value (or an item of one); reached from one through objects of
 * types no query holds (a mutation's payload, `SetThemePayload`, and the query root a Relay payload
 * re-selects through its `query` field); or inside any other object.
 */
type ObjectPlace = 'root' | 'payload' | 'inside';

/** What a walk over a response reports; each call returns false to end the walk. */
interface ResponseVisitor {
  /**
   * An object of the concrete `type`, with its key when it is an entity; `inList` when it is in a
   * list, directly or below objects without a key in one (a connection's edges and their nodes);
   * `value` reads the fields its type's lists are named by (listArguments.ts), undefined when absent;
   * `place` where it is (ObjectPlace).
   */
  object(type: GraphQLObjectType, key: string | undefined, inList: boolean, value: (field: string) => unknown, place: ObjectPlace): boolean;
  /**
   * A field present in the response (its value may be `null`), below an object of `parent`, whose
   * value `prepared.lists` tags as a list: a list field, or one returning a connection.
   */
  listField?(parent: GraphQLObjectType, definition: GraphQLField<unknown, unknown>, node: FieldNode): boolean;
  /**
   * A place that could have held objects of the `held` types holds none: a `null` or an empty list;
   * `list` when the place is (or is in) a list.
   */
  vacancy(held: HeldTypes, list: boolean): boolean;
  /** A field that came back `null`, reported before its `vacancy`: it may have been asked for an entity by key. */
  nullField?(definition: GraphQLField<unknown, unknown>, node: FieldNode): boolean;
  /** An object of one of these types, which one not told by its `__typename`; what it holds is not walked. */
  unidentified(types: readonly GraphQLObjectType[]): boolean;
  /**
   * A field the schema does not have (the origin's is newer) came back holding objects: their types,
   * and the entities in them, are not known.
   */
  unknownField(): boolean;
  /** An object of an entity type whose key field the response lacks or holds as null (reported besides `object`). */
  keyMissing(type: GraphQLObjectType): boolean;
  /**
   * A Relay connection whose selection reaches none of these entity types it holds (`{ totalCount }`,
   * `edges { cursor }`): what the answer says of them names none of them (reported besides `object`).
   */
  summarised?(entities: readonly GraphQLObjectType[]): boolean;
}

/**
 * Walks `data` of a response along the prepared operation, below the root object (root objects
 * are not entities). Returns false when the visitor ended the walk.
 */
function walkResponse(
  schema: GraphQLSchema,
  prepared: PreparedOperation,
  result: unknown,
  visitor: ResponseVisitor,
): boolean {
  const operation = operationPlan(prepared);
  const root = operation && schema.getRootType(operation.operation.operation);
  if (!operation || !root || !isPlainObject(result) || !isPlainObject(result.data)) return true;
  return new ResponseWalk(schema, prepared, visitor).fields(result.data, root, operation.plan, 'root');
}

/** What reading an object of one type at one place of the operation needs, worked out once. */
interface ObjectShape {
  /** Response keys that can hold the entity key; undefined when the type has no key field. */
  keyResponseKeys: readonly string[] | undefined;
  /** Response keys whose values hold objects, with the field, its definition and the plan below. */
  objectFields: readonly ObjectField[];
  /** Response keys that can hold each field a mutation's list tags need (see `ResponseVisitor.object`). */
  valueResponseKeys: ReadonlyMap<string, readonly string[]>;
  /**
   * Response keys the type's own selection has (fragments that apply to it) as the schema describes
   * them; not a field the type lacks, or has as a leaf selected within (selectsBeyondSchema).
   */
  knownResponseKeys: ReadonlySet<string>;
  /** The entity types a selection of the type reaches, through objects without a key; worked out when first asked. */
  reachedEntities?: ReadonlySet<string>;
}

interface ObjectField {
  responseKey: string;
  node: FieldNode;
  definition: GraphQLField<unknown, unknown>;
  plan: SelectionPlan;
  /** Whether `prepared.lists` tags its value as a list: a list field, or one returning a connection. */
  tagsLists: boolean;
}

/** Shapes by plan node and concrete type name; a plan belongs to one prepared operation, so to one schema. */
const shapesByPlan = new WeakMap<SelectionPlan, Map<string, ObjectShape>>();

/** Response keys that hold `__typename`, whatever fragment they came from, by plan node. */
const typenameKeysByPlan = new WeakMap<SelectionPlan, readonly string[]>();

class ResponseWalk {
  /**
   * The innermost connection being walked: the entity types it holds, and whether one of them, or
   * a place in one of its lists that could have held one, came in its answer (summarise).
   */
  private connection: { entities: ReadonlySet<string>; named: boolean } | undefined;
  /** Shapes of connections already summarised in this answer, as naming none of their entities or by their selection. */
  private readonly summarisedWhole = new Set<ObjectShape>();
  private readonly summarisedUnreached = new Set<ObjectShape>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly prepared: PreparedOperation,
    private readonly visitor: ResponseVisitor,
  ) {}

  /** `inList` when what the object holds is in a list too: an object without a key in one (an edge). */
  fields(object: Record<string, unknown>, type: GraphQLObjectType, plan: SelectionPlan, place: ObjectPlace, inList = false): boolean {
    const shape = this.shape(type, plan);
    // What the origin sent beyond what the schema describes of this type's own selection is not
    // walked: a field the schema lacks, or a fragment whose type condition svc-cache's schema says
    // does not apply (an interface the origin added), alone or merged under a key the type selects.
    for (const responseKey in object) {
      if (!shape.knownResponseKeys.has(responseKey) && holdsObject(object[responseKey]) && !this.visitor.unknownField()) return false;
    }
    for (const field of shape.objectFields) {
      if (!Object.hasOwn(object, field.responseKey)) continue;
      const { definition } = field;
      if (this.visitor.listField && field.tagsLists && !this.visitor.listField(type, definition, field.node)) return false;
      if (this.visitor.nullField && object[field.responseKey] === null && !this.visitor.nullField(definition, field.node)) return false;
      if (!this.value(object[field.responseKey], definition.type, field.plan, inList, place)) return false;
    }
    return true;
  }

  private value(value: unknown, type: GraphQLOutputType, plan: SelectionPlan, inList: boolean, place: ObjectPlace): boolean {
    const nullable = getNullableType(type);
    if (value === null || value === undefined) return this.vacancy(nullable, inList || isListType(nullable));
    if (isListType(nullable) !== Array.isArray(value) && holdsObject(value)) return this.visitor.unknownField();
    if (isListType(nullable)) {
      if (!Array.isArray(value)) return true;
      if (value.length === 0) return this.vacancy(nullable, true);
      return value.every((item) => this.value(item, nullable.ofType, plan, true, place));
    }
    if (!isCompositeType(nullable) || !isPlainObject(value)) return true;
    // The origin's schema returns other types here (a field now of an interface): an answer is not
    // stored, and a mutation's names those types and, walking on as the declared type, what it holds.
    if (isObjectType(nullable) && this.namesAnotherType(value, nullable, plan) && !this.visitor.unidentified([nullable, ...this.namedObjectTypes(value, plan)])) {
      return false;
    }
    const concrete = isObjectType(nullable) ? nullable : this.typeOf(value, nullable, plan);
    if (!concrete) return this.visitor.unidentified(possibleObjectTypes(this.schema, nullable));
    const shape = this.shape(concrete, plan);
    const key = shape.keyResponseKeys && keyOf(value, shape.keyResponseKeys);
    // A key that came back null names no entity either: the object may be any of its type.
    if ((key === MISSING_KEY || key === null) && !this.visitor.keyMissing(concrete)) return false;
    if (this.connection?.entities.has(concrete.name)) this.connection.named = true;
    const entityKey = typeof key === 'string' ? key : undefined;
    const fieldValue = (field: string): unknown => firstPresent(value, shape.valueResponseKeys.get(field) ?? []);
    // What an object without a key holds is in its list too (a connection's edge and the edge's
    // node); an entity's fields are its own (README, Lists by argument).
    const holdsInList = inList && shape.keyResponseKeys === undefined;
    const below = place !== 'inside' && !queriedTypes(this.schema).has(concrete.name) ? 'payload' : 'inside';
    if (!this.visitor.object(concrete, entityKey, inList, fieldValue, place)) return false;
    const isConnection = this.visitor.summarised !== undefined && shape.keyResponseKeys === undefined && isRelayConnection(concrete);
    // What an entity or another connection holds says nothing of the page around it: the
    // connection being walked is set aside below them (an owner's todos, a nested connection's nodes).
    const page = this.connection;
    if (isConnection) this.connection = { entities: this.held(concrete).listedEntities().names, named: false };
    else if (shape.keyResponseKeys !== undefined) this.connection = undefined;
    const walked = this.connection;
    const complete = this.fields(value, concrete, plan, below, holdsInList);
    this.connection = page;
    // Which entities the answer names of a connection: none when none of them, and no place that
    // could hold one, came on its page (its edges left out by @include or @skip, which the plan does
    // not evaluate), else those its selection reaches; an empty page is tagged as a vacancy.
    return complete && (!isConnection || this.summarise(shape, concrete, plan, !walked!.named));
  }

  private vacancy(type: GraphQLOutputType, list: boolean): boolean {
    const held = this.held(type);
    // An empty page, or an edge's null node: the connection's answer says where its entities are not.
    if (this.connection && !this.connection.named && held.holdsAnyOf(this.connection.entities)) this.connection.named = true;
    return this.visitor.vacancy(held, list);
  }

  /**
   * Reports the entity types a connection holds and the answer does not name, once per plan node
   * and type of the answer: what a shape leaves unnamed is worked out once, so a page of thousands of
   * connections of a type with hundreds of possible entities costs a lookup each.
   */
  private summarise(shape: ObjectShape, connection: GraphQLObjectType, plan: SelectionPlan, namesNone: boolean): boolean {
    const reported = namesNone ? this.summarisedWhole : this.summarisedUnreached;
    if (reported.has(shape)) return true;
    reported.add(shape);
    const reached = namesNone ? NO_NAMES : this.reachedEntities(connection, plan);
    const unnamed = this.held(connection).listedEntities().types.filter((entity) => !reached.has(entity.name));
    return unnamed.length === 0 || this.visitor.summarised!(unnamed);
  }

  /**
   * The entity types the selection of `type` at `plan` reaches, directly or through objects without
   * a key; once per plan node and type, each from those of the nodes below it, so the whole
   * operation's cost is its plan's size.
   */
  private reachedEntities(type: GraphQLObjectType, plan: SelectionPlan): ReadonlySet<string> {
    const shape = this.shape(type, plan);
    if (shape.reachedEntities) return shape.reachedEntities;
    const reached = new Set<string>();
    for (const field of shape.objectFields) {
      for (const possible of possibleObjectTypes(this.schema, getNamedType(field.definition.type))) {
        if (entityKeyField(possible, this.prepared.keyFields) !== undefined) reached.add(possible.name);
        else for (const name of this.reachedEntities(possible, field.plan)) reached.add(name);
      }
    }
    shape.reachedEntities = reached;
    return reached;
  }

  /** Whether a `__typename` the object received names another type than the field's own object type. */
  private namesAnotherType(object: Record<string, unknown>, type: GraphQLObjectType, plan: SelectionPlan): boolean {
    return this.typenameKeys(plan).some((responseKey) => typeof object[responseKey] === 'string' && object[responseKey] !== type.name);
  }

  private namedObjectTypes(object: Record<string, unknown>, plan: SelectionPlan): GraphQLObjectType[] {
    return this.typenameKeys(plan).flatMap((responseKey) => {
      const named = typeof object[responseKey] === 'string' ? this.schema.getType(object[responseKey]) : undefined;
      return isObjectType(named) ? [named] : [];
    });
  }

  private typenameKeys(plan: SelectionPlan): readonly string[] {
    let typenameKeys = typenameKeysByPlan.get(plan);
    if (!typenameKeys) {
      typenameKeys = [...plan.fields()].flatMap(([responseKey, fields]) => (fields[0]!.name.value === '__typename' ? [responseKey] : []));
      typenameKeysByPlan.set(plan, typenameKeys);
    }
    return typenameKeys;
  }

  /** The concrete type named by whichever `__typename` the object received. */
  private typeOf(
    object: Record<string, unknown>,
    abstractType: Exclude<GraphQLCompositeType, GraphQLObjectType>,
    plan: SelectionPlan,
  ): GraphQLObjectType | undefined {
    for (const responseKey of this.typenameKeys(plan)) {
      const typename = object[responseKey];
      if (typeof typename !== 'string') continue;
      const type = this.schema.getType(typename);
      if (isObjectType(type) && this.schema.isSubType(abstractType, type)) return type;
    }
    return undefined;
  }

  private shape(type: GraphQLObjectType, plan: SelectionPlan): ObjectShape {
    let byType = shapesByPlan.get(plan);
    if (!byType) {
      byType = new Map();
      shapesByPlan.set(plan, byType);
    }
    let shape = byType.get(type.name);
    if (!shape) {
      shape = this.workOutShape(type, plan);
      byType.set(type.name, shape);
    }
    return shape;
  }

  private workOutShape(type: GraphQLObjectType, plan: SelectionPlan): ObjectShape {
    const filter = fragmentsFor(this.schema, type);
    const keyField = entityKeyField(type, this.prepared.keyFields);
    const valueFields = this.prepared.lists?.valueFields(type);
    const { addedKeyPrefix } = this.prepared;
    const definitions = type.getFields();
    const keyResponseKeys: string[] | undefined = keyField === undefined ? undefined : [];
    const valueResponseKeys = new Map<string, string[]>();
    const objectFields: ObjectField[] = [];
    const knownResponseKeys = new Set<string>();
    for (const [responseKey, fields] of plan.fields(filter)) {
      const node = fields[0]!;
      const name = node.name.value;
      const plain = (node.arguments ?? []).length === 0;
      if (name === keyField && plain) keyResponseKeys?.push(responseKey);
      // An object-valued one is read only where svc-cache selected exactly the sub-fields it compares.
      if (valueFields?.has(name) && plain && (!valueFields.get(name) || responseKey.startsWith(addedKeyPrefix))) {
        valueResponseKeys.set(name, [...(valueResponseKeys.get(name) ?? []), responseKey]);
      }
      const definition = definitions[name];
      if (!selectsBeyondSchema(name, definition, node)) knownResponseKeys.add(responseKey);
      // What svc-cache selected to name lists holds no objects of the answer's own.
      if (!definition || !isCompositeType(getNamedType(definition.type)) || responseKey.startsWith(addedKeyPrefix)) continue;
      const tagsLists = this.prepared.lists?.tagsLists(type, definition) ?? false;
      objectFields.push({ responseKey, node, definition, plan: plan.child(responseKey, filter), tagsLists });
    }
    return { keyResponseKeys, objectFields, valueResponseKeys, knownResponseKeys };
  }

  private held(type: GraphQLOutputType): HeldTypes {
    return heldTypes(this.schema, this.prepared.keyFields, getNamedType(type));
  }
}

/**
 * Whether a selection asks for what the schema does not have, so the origin's schema is newer: a
 * field the type lacks, or one it has as a leaf with sub-fields selected. (`__typename` is in no
 * type's fields, and holds a name.)
 */
function selectsBeyondSchema(name: string, definition: GraphQLField<unknown, unknown> | undefined, node: FieldNode): boolean {
  if (definition === undefined) return !name.startsWith('__');
  return !isCompositeType(getNamedType(definition.type)) && node.selectionSet !== undefined;
}

/**
 * Whether a JSON value is or holds an object (in a list, at any depth); linear in its size, with a
 * stack of its own: an origin's list may nest thousands deep (the CPU audit's 16,000 overflowed).
 */
function holdsObject(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (isPlainObject(next)) return true;
    if (Array.isArray(next)) for (const item of next) pending.push(item);
  }
  return false;
}

/** The value under the first of the response keys the object holds; undefined when it holds none. */
function firstPresent(object: Record<string, unknown>, responseKeys: readonly string[]): unknown {
  for (const responseKey of responseKeys) if (Object.hasOwn(object, responseKey)) return object[responseKey];
  return undefined;
}

const MISSING_KEY = Symbol('missing key');

const NO_NAMES: ReadonlySet<string> = new Set();

/**
 * The entity key, from whichever selection of the key field (the client's or an added one) came
 * back; null when it came back null, `MISSING_KEY` when none did (neither names the object).
 */
function keyOf(object: Record<string, unknown>, keyResponseKeys: readonly string[]): string | null | typeof MISSING_KEY {
  let key: string | null | typeof MISSING_KEY = MISSING_KEY;
  for (const responseKey of keyResponseKeys) {
    if (!Object.hasOwn(object, responseKey)) continue;
    const value = object[responseKey];
    if (value !== null && value !== undefined) return entityKeyText(value);
    key = null;
  }
  return key;
}
