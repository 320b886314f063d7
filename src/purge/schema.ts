import {
  assertValidSchema,
  getNullableType,
  GraphQLBoolean,
  GraphQLEnumType,
  GraphQLError,
  GraphQLInputObjectType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLSchema,
  GraphQLString,
  isEnumType,
  isIntrospectionType,
  isObjectType,
  specifiedScalarTypes,
  type GraphQLEnumValueConfigMap,
  type GraphQLFieldConfig,
  type GraphQLFieldConfigMap,
  type GraphQLInputType,
  type GraphQLResolveInfo,
} from 'graphql';
import type { Logger } from '../observability/index.js';
import { canonicalJson } from '../graphql/index.js';
import { entityKeyField, entityKeyText, type KeyFields } from '../invalidation/index.js';
import { invalidationTag } from '../invalidation/index.js';
import type { PurgeTargets } from './targets.js';

/**
 * The purge API as a GraphQL schema of its own, derived from the origin schema
 * (docs/graphql-caching.md, Purge API), so that purges are validated, executed and introspected as
 * any GraphQL request is:
 *
 * ```graphql
 * type Mutation {
 *   _purgeAll: Boolean!
 *   _purgeQuery(queries: [QueryField!]!): Boolean!       # QueryField: the origin's root query fields
 *   _purgeOperationName(names: [String!]!): Boolean!
 *   _purgeType(type: String!, keyFields: [KeyFieldInput!]): Boolean!   # Stellate's schemaless form
 *   _purge<T>: Boolean!                                  # every object type T of the origin
 *   purge<T>(<key>: [<KeyType>!]): Boolean!              # T's key field (keyFields), its origin type
 * }
 * input KeyFieldInput { name: String!, value: String! }
 * type Query { _purgeApi: Boolean! }
 * ```
 *
 * Every purge field also takes `soft: Boolean = false`: soft, it marks what it names stale instead
 * of removing it (CacheStore.markStale).
 *
 * GraphQL requires a Query type: `_purgeApi` is a harmless placeholder that always answers `true`.
 *
 * The origin always wins a name: a purge field whose name the origin's Mutation type already has is
 * not generated, so a request for it reaches the origin unchanged. Such fields, and others that
 * cannot be generated, are listed in `PurgeApi.omitted` for the caller to log.
 */

/** `keyFields` of the configuration: an object's identity is its first key field the type has. */
export interface PurgeApi {
  schema: GraphQLSchema;
  /** The purge schema's Mutation fields: a mutation selecting only these (and `__typename`) is a purge. */
  mutationFields: ReadonlySet<string>;
  /**
   * Root fields of a query the purge schema answers (introspection and `_purgeApi`), when the
   * request carries the purge-token header.
   */
  queryFields: ReadonlySet<string>;
  /** Purge fields that were not generated, and why. */
  omitted: readonly OmittedPurgeField[];
}

export interface OmittedPurgeField {
  field: string;
  reason: string;
}

export function buildPurgeSchema(origin: GraphQLSchema, keyFields: KeyFields): GraphQLSchema {
  return derivePurgeApi(origin, keyFields).schema;
}

/** An origin mutation named like a purge field wins the name; operators must hear which. */
export function warnOmittedPurgeFields(origin: GraphQLSchema, keyFields: KeyFields, logger: Logger): void {
  for (const { field, reason } of derivePurgeApi(origin, keyFields).omitted) {
    logger.warn(`purge field ${field} is not offered: ${reason}`);
  }
}

/** Derived once per origin schema and `keyFields`: a config reload that keeps both reuses it. */
export function derivePurgeApi(origin: GraphQLSchema, keyFields: KeyFields): PurgeApi {
  const keyFieldsKey = canonicalJson(keyFields);
  const remembered = derivedByOrigin.get(origin);
  if (remembered?.keyFieldsKey === keyFieldsKey) return remembered.api;
  const api = derive(origin, keyFields);
  derivedByOrigin.set(origin, { keyFieldsKey, api });
  return api;
}

/** One slot per origin schema: `keyFields` changes only with a config reload, and then for good. */
const derivedByOrigin = new WeakMap<GraphQLSchema, { keyFieldsKey: string; api: PurgeApi }>();

const PLACEHOLDER_QUERY_FIELD = '_purgeApi';
const INTROSPECTION_ROOT_FIELDS = ['__schema', '__type', '__typename'];
/** Type names the purge schema itself defines; an origin key type of the same name cannot join it. */
const PURGE_TYPE_NAMES = new Set(['Query', 'Mutation', 'QueryField', 'KeyFieldInput']);
/** Names GraphQL forbids as enum values. */
const NOT_ENUM_VALUES = new Set(['true', 'false', 'null']);

type PurgeFieldConfig = GraphQLFieldConfig<unknown, PurgeTargets>;

const TRUE = new GraphQLNonNull(GraphQLBoolean);

/** Taken by every purge field, as Stellate's are. */
const SOFT_ARGUMENT = {
  type: GraphQLBoolean,
  defaultValue: false,
  description: 'Mark stale (served within swr while refreshed) instead of removing.',
};

/** Whether the purge field was asked to be soft (`soft: null` is as left out). */
function isSoft(args: object): boolean {
  return (args as { soft?: unknown }).soft === true;
}

function derive(origin: GraphQLSchema, keyFields: KeyFields): PurgeApi {
  const originMutationFields = origin.getMutationType()?.getFields() ?? {};
  const omitted: OmittedPurgeField[] = [];
  const fields: GraphQLFieldConfigMap<unknown, PurgeTargets> = {};
  const offer = (name: string, field: PurgeFieldConfig): void => {
    if (Object.hasOwn(originMutationFields, name)) {
      const reason = `the origin's Mutation type has a field ${name}; requests for it go to the origin`;
      omitted.push({ field: name, reason });
    } else if (Object.hasOwn(fields, name)) {
      omitted.push({ field: name, reason: 'the built-in purge field of that name takes precedence' });
    } else {
      fields[name] = { ...field, args: { ...field.args, soft: SOFT_ARGUMENT } };
    }
  };

  offer('_purgeAll', {
    type: TRUE,
    description: 'Invalidates every cached response.',
    resolve: (_source, args, targets, info) => {
      targets.addEverything(info.fieldName, isSoft(args));
      return true;
    },
  });
  const queryField = queryFieldEnum(origin, omitted);
  if (queryField) {
    offer('_purgeQuery', {
      type: TRUE,
      description: 'Invalidates the cached results of queries that select any of these root query fields.',
      args: { queries: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(queryField))) } },
      resolve: (_source, args: { queries: string[] }, targets, info) => {
        targets.addTags(info.fieldName, args.queries.map(invalidationTag.query), isSoft(args));
        return true;
      },
    });
  }
  offer('_purgeOperationName', {
    type: TRUE,
    description: 'Invalidates the cached results of operations with any of these names.',
    args: { names: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(GraphQLString))) } },
    resolve: (_source, args: { names: string[] }, targets, info) => {
      targets.addTags(info.fieldName, args.names.map(invalidationTag.operation), isSoft(args));
      return true;
    },
  });
  // Before the per-type fields: an origin type named `Type` is purged through this one.
  offer('_purgeType', schemalessPurgeField(origin, keyFields));

  const keyTypes = new KeyTypeCopies();
  for (const type of entityTypes(origin)) {
    const typeTag = invalidationTag.type(type.name);
    offer(`_purge${type.name}`, {
      type: TRUE,
      description: `Invalidates every cached response that contains any ${type.name}.`,
      resolve: (_source, args, targets, info) => {
        targets.addTags(info.fieldName, [typeTag], isSoft(args));
        return true;
      },
    });
    const key = keyArgument(type, keyFields, keyTypes, omitted);
    if (!key) continue;
    offer(`purge${type.name}`, {
      type: TRUE,
      description:
        `Invalidates the cached responses that contain the ${type.name} with these ${key.name} values,` +
        ` or any ${type.name} when ${key.name} is left out.`,
      args: { [key.name]: { type: new GraphQLList(new GraphQLNonNull(key.type)) } },
      resolve: (_source, args: Record<string, unknown>, targets, info) => {
        const values = args[key.name] as unknown[] | null | undefined;
        if (values === null || values === undefined) {
          // Only a purge that leaves the argument out names the whole type: a null, or a variable
          // the caller left unset, is a list its backend failed to build (README, Purge API).
          if (writesArgument(info, key.name)) targets.reject(nullKeysError(info, `${key.name} is null`, `leave ${key.name} out to purge every ${type.name}`));
          else targets.addTags(info.fieldName, [typeTag], isSoft(args));
        } else {
          targets.addTags(info.fieldName, entityPurgeTags(type.name, values), isSoft(args));
        }
        return true;
      },
    });
  }

  const originQueryFields = origin.getQueryType()?.getFields() ?? {};
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      description: 'GraphQL requires a Query type; the purge API is its mutations.',
      fields: {
        [PLACEHOLDER_QUERY_FIELD]: { type: TRUE, description: 'Always true.', resolve: () => true },
      },
    }),
    mutation:
      Object.keys(fields).length === 0
        ? undefined
        : new GraphQLObjectType<unknown, PurgeTargets>({
            name: 'Mutation',
            description: 'svc-cache purge API: each field answers true once the cache has dropped what it names.',
            fields,
          }),
  });
  assertValidSchema(schema);
  return {
    schema,
    mutationFields: new Set(Object.keys(fields)),
    queryFields: new Set([
      ...INTROSPECTION_ROOT_FIELDS,
      ...(Object.hasOwn(originQueryFields, PLACEHOLDER_QUERY_FIELD) ? [] : [PLACEHOLDER_QUERY_FIELD]),
    ]),
    omitted,
  };
}

const KEY_FIELD_INPUT = new GraphQLInputObjectType({
  name: 'KeyFieldInput',
  description: 'A key field of an object and one value of it, as Stellate\'s _purgeType takes them.',
  fields: { name: { type: new GraphQLNonNull(GraphQLString) }, value: { type: new GraphQLNonNull(GraphQLString) } },
});

/**
 * Stellate's schemaless `_purgeType(type, keyFields)`, which existing purge clients call: any object
 * of the type, or those whose key field (the one entity tags use, `entityKeyField`) has one of the
 * values. A type that is no object type of the origin, or a field that is not its key field, is a
 * request error (BAD_USER_INPUT) and nothing is purged.
 */
function schemalessPurgeField(origin: GraphQLSchema, keyFields: KeyFields): PurgeFieldConfig {
  const types = new Map(entityTypes(origin).map((type) => [type.name, type]));
  return {
    type: TRUE,
    description:
      'Invalidates every cached response that contains an object of this type, or with keyFields, those ' +
      'whose key field has one of these values.',
    args: { type: { type: new GraphQLNonNull(GraphQLString) }, keyFields: { type: new GraphQLList(new GraphQLNonNull(KEY_FIELD_INPUT)) } },
    resolve: (_source, args: SchemalessArguments, targets, info) => {
      const problem = schemalessProblem(args, types.get(args.type), keyFields);
      if (problem !== undefined) {
        targets.reject(new GraphQLError(`_purgeType: ${problem}`, { nodes: info.fieldNodes, extensions: { code: 'BAD_USER_INPUT' } }));
      } else if (args.keyFields === null || args.keyFields === undefined) {
        if (writesArgument(info, 'keyFields')) targets.reject(nullKeysError(info, 'keyFields is null', `leave keyFields out to purge every ${args.type}`));
        else targets.addTags(info.fieldName, [invalidationTag.type(args.type)], isSoft(args));
      } else {
        const tags = entityPurgeTags(args.type, args.keyFields.map((field) => field.value));
        targets.addTags(info.fieldName, tags, isSoft(args));
      }
      return true;
    },
  };
}

/** Whether the purge field, as written, passes this argument (a literal or a variable, set or not). */
function writesArgument(info: GraphQLResolveInfo, name: string): boolean {
  return info.fieldNodes.some((node) => node.arguments?.some((argument) => argument.name.value === name) ?? false);
}

function nullKeysError(info: GraphQLResolveInfo, problem: string, remedy: string): GraphQLError {
  return new GraphQLError(`${info.fieldName}: ${problem}; ${remedy}`, { nodes: info.fieldNodes, extensions: { code: 'BAD_USER_INPUT' } });
}

/**
 * The tags a purge of these key values of the type names: each value's entity tags, and the type's
 * objects whose key the answer does not hold, which may be any of them (`invalidationTag.unkeyed`).
 */
function entityPurgeTags(type: string, values: readonly unknown[]): string[] {
  if (values.length === 0) return [];
  return [...values.flatMap((value) => entityTags(type, value)), invalidationTag.unkeyed(type)];
}

/**
 * The entity tags a purged key value names. A response's key value is tagged as JSON.parse reads it
 * and prints it again (entityKeyText): `1.0` as `1`, and a number past 2^53 rounded. A value written
 * as a number literal, in the string a purge gives it in (an `ID`, `_purgeType`'s `value`), so also
 * names the tag of that number, whichever way the origin spelt it (README, Purge API); at worst it
 * also purges the string key of the same text.
 */
function entityTags(type: string, value: unknown): string[] {
  const tag = invalidationTag.entity(type, entityKeyText(value));
  if (typeof value !== 'string' || !JSON_NUMBER.test(value)) return [tag];
  const asNumber = invalidationTag.entity(type, entityKeyText(JSON.parse(value)));
  return asNumber === tag ? [tag] : [tag, asNumber];
}

const JSON_NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;

interface SchemalessArguments {
  type: string;
  keyFields?: Array<{ name: string; value: string }> | null;
}

/** What the schema cannot check of `_purgeType`'s arguments: the type must exist, the fields be its key. */
function schemalessProblem(args: SchemalessArguments, type: GraphQLObjectType | undefined, keyFields: KeyFields): string | undefined {
  if (type === undefined) return `"${args.type}" is not an object type of the origin schema`;
  const key = entityKeyField(type, keyFields);
  const other = args.keyFields?.find((field) => field.name !== key);
  if (other === undefined) return undefined;
  return `${type.name} is identified by ${key === undefined ? 'no key field' : `"${key}"`}, not by "${other.name}"`;
}

/** The origin's object types that can appear in a response: not root types, not introspection types. */
function entityTypes(origin: GraphQLSchema): GraphQLObjectType[] {
  const roots = new Set([origin.getQueryType(), origin.getMutationType(), origin.getSubscriptionType()]);
  return Object.values(origin.getTypeMap())
    .filter((type): type is GraphQLObjectType => isObjectType(type) && !isIntrospectionType(type) && !roots.has(type))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function queryFieldEnum(origin: GraphQLSchema, omitted: OmittedPurgeField[]): GraphQLEnumType | undefined {
  const values: GraphQLEnumValueConfigMap = {};
  for (const name of Object.keys(origin.getQueryType()?.getFields() ?? {})) {
    if (NOT_ENUM_VALUES.has(name)) {
      omitted.push({
        field: `_purgeQuery(queries: ${name})`,
        reason: 'GraphQL does not allow it as an enum value; purge its results with _purgeOperationName or _purge<Type>',
      });
    } else {
      values[name] = { value: name };
    }
  }
  if (Object.keys(values).length === 0) return undefined;
  return new GraphQLEnumType({ name: 'QueryField', description: 'A root field of the origin\'s Query type.', values });
}

/**
 * The argument of `purge<T>`: named after T's key field, by the rule entity tags of responses follow
 * (`entityKeyField`), and typed as that field's scalar or enum. A type without one gets only
 * `_purge<T>`.
 */
function keyArgument(
  type: GraphQLObjectType,
  keyFields: KeyFields,
  keyTypes: KeyTypeCopies,
  omitted: OmittedPurgeField[],
): { name: string; type: GraphQLInputType } | undefined {
  const fields = type.getFields();
  const name = entityKeyField(type, keyFields);
  if (name === undefined) {
    const unusable = (keyFields.types[type.name] ?? keyFields.defaults).find((candidate) => Object.hasOwn(fields, candidate));
    if (unusable !== undefined) {
      const field = fields[unusable]!;
      omitted.push({
        field: `purge${type.name}`,
        reason: `its key field ${type.name}.${unusable}: ${String(field.type)} cannot identify objects (it must be a scalar or an enum and take no required argument)`,
      });
    }
    return undefined;
  }
  const leaf = getNullableType(fields[name]!.type) as GraphQLScalarType | GraphQLEnumType;
  if (PURGE_TYPE_NAMES.has(leaf.name)) {
    omitted.push({
      field: `purge${type.name}`,
      reason: `its key type ${leaf.name} has the name of a type of the purge schema`,
    });
    return undefined;
  }
  return { name, type: keyTypes.copyOf(leaf) };
}

/**
 * The purge schema's own copies of the origin's key types: a GraphQL schema owns its named types,
 * and origin scalars keep the pass-through coercion a schema built from SDL or introspection gives
 * them. Built-in scalars are the shared instances.
 */
class KeyTypeCopies {
  private readonly byName = new Map<string, GraphQLScalarType | GraphQLEnumType>();

  copyOf(type: GraphQLScalarType | GraphQLEnumType): GraphQLScalarType | GraphQLEnumType {
    const builtIn = specifiedScalarTypes.find((scalar) => scalar.name === type.name);
    if (builtIn) return builtIn;
    let copy = this.byName.get(type.name);
    if (!copy) {
      copy = isEnumType(type)
        ? new GraphQLEnumType({
            name: type.name,
            description: type.description,
            values: Object.fromEntries(
              type.getValues().map((value) => [value.name, { value: value.name, description: value.description }]),
            ),
          })
        : new GraphQLScalarType({ name: type.name, description: type.description, specifiedByURL: type.specifiedByURL });
      this.byName.set(type.name, copy);
    }
    return copy;
  }
}
