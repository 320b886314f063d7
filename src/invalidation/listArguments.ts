import { createHash } from 'node:crypto';
import {
  getArgumentValues,
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isLeafType,
  isListType,
  isObjectType,
  isRequiredArgument,
  isScalarType,
  isSpecifiedScalarType,
  type FieldNode,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
} from 'graphql';
import type { ListArguments } from '../config/index.js';
import { canonicalJson } from '../graphql/index.js';
import { getOrInsertComputed, isPlainObject } from '../util/index.js';
import { heldTypes, possibleObjectTypes } from './heldTypes.js';
import { entityKeyField, type KeyFields } from './keyFields.js';
import { isRelayConnection } from './relayTypes.js';
import { invalidationTag } from './tags.js';

/**
 * Argument-aware list invalidation (README, Invalidation after mutations; docs/graphql-caching.md,
 * Invalidation). A list field's arguments narrow what it holds when they name a field of the
 * objects in it: `usersByRole(role: admin)` holds users whose `role` is `admin`. So a cached list is
 * tagged, per object type it could hold, with its field and the values of its narrowing arguments
 * (`Query.usersByRole {"role":"admin"}`), and a mutation that returns an object computes, from the
 * object's own field values, the tag of every list it could belong to: for each list field that
 * can hold its type, one tag per subset of the field's narrowing arguments (a list cached with
 * `role` alone, with `team` alone, with both, with neither). A Relay connection field
 * (`todosConnection(done: true)`) counts as a list of the entities its edges hold (addListField).
 * Both sides are worked out from the schema, `listArguments.fields` and `keyFields` by this one
 * index, so they agree.
 *
 * An argument narrows a list of type T when it maps (by name, or through `listArguments.fields`)
 * to a field of T that takes no required arguments and either has the argument's own enum or
 * built-in scalar type (String, ID, Int, Float, Boolean), neither being a list, or is an object
 * whose fields match, by name and type, every field of the argument's input object type (all of
 * them enums or built-in scalars). Everything else (`first`, `after`, a list argument, a custom
 * scalar, a type mismatch) never narrows: such lists are invalidated
 * whatever their value. A list field with more than `MAX_NARROWING_ARGUMENTS` narrowing arguments
 * for a type counts as having none, which bounds a mutation's tags at 2^4 per list field.
 */
export const MAX_NARROWING_ARGUMENTS = 4;

/** Argument values longer than this (as canonical JSON) are hashed in tags, so a tag stays short. */
const MAX_ARGUMENT_TEXT = 128;

/** How one argument narrows a list for one object type. */
interface NarrowingArgument {
  argument: GraphQLArgument;
  /** The field of the object type whose value the argument must equal. */
  field: string;
  /** For an input-object argument: its fields, which the object field's value is compared on. */
  subfields?: readonly string[];
}

/** One list field (`Parent.field`) as it concerns one object type it can hold. */
interface ListFieldTarget {
  coordinate: string;
  narrowing: readonly NarrowingArgument[];
}

/** What a mutation's answer must hold of an object of a type to name its lists: field name to sub-fields (none for a leaf). */
export type ListValueFields = ReadonlyMap<string, readonly string[] | undefined>;

/** The index for one schema, one `listArguments` setting and one `keyFields`, worked out once. */
export function listArgumentIndex(schema: GraphQLSchema, settings: ListArguments, keyFields: KeyFields): ListArgumentIndex {
  const bySettings = getOrInsertComputed(indexes, schema, () => new WeakMap<ListArguments, WeakMap<KeyFields, ListArgumentIndex>>());
  const byKeyFields = getOrInsertComputed(bySettings, settings, () => new WeakMap<KeyFields, ListArgumentIndex>());
  return getOrInsertComputed(byKeyFields, keyFields, () => new ListArgumentIndex(schema, settings, keyFields));
}

const indexes = new WeakMap<GraphQLSchema, WeakMap<ListArguments, WeakMap<KeyFields, ListArgumentIndex>>>();

/** A field of a parent type: where a list's arguments are read. */
type ParentField = readonly [GraphQLObjectType, GraphQLField<unknown, unknown>];

export class ListArgumentIndex {
  /** `mode: match`: mutations name the lists their objects belong to; `any`, every list of their types. */
  readonly matching: boolean;
  /** List fields by the object type they can hold. */
  private readonly targetsByType = new Map<string, ListFieldTarget[]>();
  /** List fields by coordinate, then by object type. */
  private readonly targetsByField = new Map<string, Map<string, ListFieldTarget>>();
  private readonly valueFieldsByType = new Map<string, ListValueFields>();
  /** The fields that can return each object type, for the connections among them. */
  private readonly fieldsReturning = new Map<string, ParentField[]>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly settings: ListArguments,
    private readonly keyFields: KeyFields,
  ) {
    this.matching = settings.mode === 'match';
    // No answer that is stored holds a list under the Mutation or Subscription root.
    const writeRoots = new Set([schema.getMutationType(), schema.getSubscriptionType()]);
    const parents = Object.values(schema.getTypeMap()).filter((type): type is GraphQLObjectType => isObjectType(type) && !type.name.startsWith('__') && !writeRoots.has(type));
    for (const parent of parents) {
      for (const field of Object.values(parent.getFields())) {
        for (const type of possibleObjectTypes(schema, getNamedType(field.type))) getOrInsertComputed(this.fieldsReturning, type.name, () => []).push([parent, field]);
      }
    }
    for (const parent of parents) this.addListFields(parent);
  }

  /** Whether a stored answer's value of this field is tagged by `entryTags`: a list field, or one returning a connection. */
  tagsLists(parent: GraphQLObjectType, field: GraphQLField<unknown, unknown>): boolean {
    return this.targetsByField.has(`${parent.name}.${field.name}`);
  }

  /** The fields a mutation's answer must hold of an object of this type for `mutationTags`. */
  valueFields(type: GraphQLObjectType): ListValueFields {
    return this.valueFieldsByType.get(type.name) ?? NO_FIELDS;
  }

  /**
   * The tags of one list field's value in a stored answer: per object type it can hold, its
   * coordinate and the values of the arguments that narrow it for that type (none narrow when the
   * arguments cannot be read). `variables` are the operation's coerced variable values.
   */
  entryTags(parent: GraphQLObjectType, field: GraphQLField<unknown, unknown>, node: FieldNode, variables: Record<string, unknown> | undefined): string[] {
    const targets = this.targetsByField.get(`${parent.name}.${field.name}`);
    if (!targets) return [];
    const values = variables && argumentValues(field, node, variables);
    const tags: string[] = [];
    for (const [typeName, target] of targets) {
      const narrowed: Record<string, unknown> = {};
      for (const narrowing of target.narrowing) {
        const value = values?.[narrowing.argument.name];
        if (narrows(value, narrowing)) narrowed[narrowing.argument.name] = value;
      }
      tags.push(listTag(typeName, target.coordinate, narrowed));
    }
    return tags;
  }

  /**
   * The tags of every cached list an object of `type` could belong to, given its field values
   * (`value(field)`, undefined when the answer lacks it). Undefined when a needed value is missing:
   * the caller then names every list of the type.
   */
  mutationTags(type: GraphQLObjectType, value: (field: string) => unknown): string[] | undefined {
    const tags: string[] = [];
    for (const target of this.targetsByType.get(type.name) ?? []) {
      const known: Array<[string, unknown]> = [];
      for (const narrowing of target.narrowing) {
        const fieldValue = value(narrowing.field);
        if (fieldValue === undefined) return undefined;
        const compared = narrowing.subfields && isPlainObject(fieldValue) ? pick(fieldValue, narrowing.subfields) : fieldValue;
        if (narrows(compared, narrowing)) known.push([narrowing.argument.name, compared]);
      }
      for (let subset = 0; subset < 1 << known.length; subset++) {
        const narrowed = Object.fromEntries(known.filter((_, bit) => (subset & (1 << bit)) !== 0));
        tags.push(listTag(type.name, target.coordinate, narrowed));
      }
    }
    return tags;
  }

  /**
   * A list field holds its items' types. A list whose items have no key field (a connection's
   * `edges`) holds as well the entities they hold (each edge's `node`): the list's arguments are
   * then those of the field that returned the object holding it when that object is a connection
   * (`todosConnection(first:, done:)` returning a `TodoConnection`: isConnection), or else its own. The
   * list field of such a connection is no list of those entities itself: it takes no arguments,
   * so its tag would name every page of every connection. The entities a connection's lists hold
   * are gathered first, so each field returning it gets each of them once.
   */
  private addListFields(parent: GraphQLObjectType): void {
    const connection = this.isConnection(parent);
    const heldByConnection = new Set<GraphQLObjectType>();
    for (const field of Object.values(parent.getFields())) {
      const nullable = getNullableType(field.type);
      if (!isListType(nullable)) continue;
      const items = possibleObjectTypes(this.schema, getNamedType(nullable));
      for (const item of items) this.addTarget(parent, field, item);
      // Key-less items of one cycle of types share what they hold: each is gone through once.
      const keyless = new Set(items.filter((item) => !this.isEntity(item)).map((item) => heldTypes(this.schema, this.keyFields, item)));
      for (const held of [...keyless].flatMap((component) => component.entities())) {
        if (connection) heldByConnection.add(held);
        else this.addTarget(parent, field, held);
      }
    }
    for (const [owner, field] of this.fieldsReturning.get(parent.name) ?? []) {
      for (const held of heldByConnection) this.addTarget(owner, field, held);
    }
  }

  /**
   * A Relay connection (named `…Connection`, or holding `edges` and `pageInfo`) without a key field:
   * the arguments of the field returning it narrow what its lists hold (`todosConnection(done:)`).
   * Those of a field returning another key-less object describe that object, not its lists'
   * items (`team(name:)` returning a `Team` with `members`), so its lists keep their own.
   */
  private isConnection(parent: GraphQLObjectType): boolean {
    return !this.isEntity(parent) && parent !== this.schema.getQueryType() && isRelayConnection(parent);
  }

  /** Makes `parent.field` a list of `type`, narrowed by those of its arguments that narrow for it. */
  private addTarget(parent: GraphQLObjectType, field: GraphQLField<unknown, unknown>, type: GraphQLObjectType): void {
    const coordinate = `${parent.name}.${field.name}`;
    const byType = getOrInsertComputed(this.targetsByField, coordinate, () => new Map<string, ListFieldTarget>());
    if (byType.has(type.name)) return;
    const narrowing = field.args.flatMap((argument) => {
      const mapped = this.settings.fields[`${coordinate}.${argument.name}`];
      // null: the argument filters by something else than equality (a search), so never narrows.
      if (mapped === null) return [];
      const [mappedType, mappedField] = mapped?.split('.') ?? [];
      const fieldName = mapped !== undefined && mappedType === type.name ? mappedField! : argument.name;
      const found = narrowingArgument(argument, type, fieldName);
      return found ? [found] : [];
    });
    const target = { coordinate, narrowing: narrowing.length > MAX_NARROWING_ARGUMENTS ? [] : narrowing };
    byType.set(type.name, target);
    getOrInsertComputed(this.targetsByType, type.name, () => []).push(target);
    this.addValueFields(type, target.narrowing);
  }

  private isEntity(type: GraphQLObjectType): boolean {
    return entityKeyField(type, this.keyFields) !== undefined;
  }

  private addValueFields(type: GraphQLObjectType, narrowing: readonly NarrowingArgument[]): void {
    if (narrowing.length === 0) return;
    const fields = new Map(this.valueFieldsByType.get(type.name) ?? []);
    for (const { field, subfields } of narrowing) {
      const known = fields.get(field);
      fields.set(field, subfields && [...new Set([...(known ?? []), ...subfields])]);
    }
    this.valueFieldsByType.set(type.name, fields);
  }
}

const NO_FIELDS: ListValueFields = new Map();

/**
 * Whether `argument` narrows a list of `type` through the type's field `fieldName`, and how: see
 * the rule at the top of this file. Also used to check `listArguments.fields` against the schema.
 */
export function narrowingArgument(argument: GraphQLArgument, type: GraphQLObjectType, fieldName: string): NarrowingArgument | undefined {
  const field = type.getFields()[fieldName];
  if (!field || field.args.some(isRequiredArgument)) return undefined;
  const argumentType = getNullableType(argument.type);
  const fieldType = getNullableType(field.type);
  if (isLeafType(argumentType)) return sameLeafType(argumentType, fieldType) ? { argument, field: fieldName } : undefined;
  if (!isInputObjectType(argumentType) || !isObjectType(fieldType)) return undefined;
  const objectFields = fieldType.getFields();
  const inputFields = Object.values(argumentType.getFields());
  const comparable = inputFields.every((inputField) => {
    const objectField = objectFields[inputField.name];
    return objectField !== undefined && !objectField.args.some(isRequiredArgument) && sameLeafType(getNullableType(inputField.type), getNullableType(objectField.type));
  });
  return comparable && inputFields.length > 0 ? { argument, field: fieldName, subfields: inputFields.map((inputField) => inputField.name) } : undefined;
}

/**
 * One enum, or one of GraphQL's own scalars, on both sides. A custom scalar may answer in another
 * spelling than it is given in (a date with or without milliseconds), so it never compares equal
 * safely, and never narrows.
 */
function sameLeafType(argumentType: GraphQLInputType, fieldType: GraphQLOutputType): boolean {
  const comparable = isEnumType(argumentType) || (isScalarType(argumentType) && isSpecifiedScalarType(argumentType));
  return comparable && isLeafType(fieldType) && argumentType.name === fieldType.name;
}

/**
 * Whether a value narrows: `null` never does (an origin may read it as "no filter"), nor an input
 * object missing one of its fields or holding a `null`.
 */
function narrows(value: unknown, narrowing: NarrowingArgument): boolean {
  if (value === null || value === undefined) return false;
  if (!narrowing.subfields) return true;
  return isPlainObject(value) && narrowing.subfields.every((name) => value[name] !== null && value[name] !== undefined);
}

function pick(object: Record<string, unknown>, names: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(names.map((name) => [name, object[name]]));
}

function argumentValues(field: GraphQLField<unknown, unknown>, node: FieldNode, variables: Record<string, unknown>): Record<string, unknown> | undefined {
  try {
    return getArgumentValues(field, node, variables);
  } catch {
    return undefined;
  }
}

function listTag(type: string, coordinate: string, narrowed: Record<string, unknown>): string {
  const text = canonicalJson(narrowed);
  const spelt = text.length <= MAX_ARGUMENT_TEXT ? text : `#${createHash('sha256').update(text).digest('base64url')}`;
  return invalidationTag.listField(type, coordinate, spelt);
}
