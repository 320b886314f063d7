import { getNullableType, isEnumType, isRequiredArgument, isScalarType, type GraphQLObjectType } from 'graphql';
import { canonicalJson } from '../graphql/index.js';

/** `keyFields` of the configuration: entity key field candidates, by default and per type. */
export interface KeyFields {
  defaults: readonly string[];
  types: Readonly<Record<string, readonly string[]>>;
}

/**
 * The field that identifies objects of the type (docs/graphql-caching.md, Invalidation): the first of its
 * `keyFields` candidates that the type has. The purge API derives `purge<Type>(<key>:)` by the same
 * rule, so an entity tag read from a response and one named by a purge agree. Undefined when the
 * type has none, or when that field cannot be selected plainly for a value (not a scalar or enum,
 * or it needs arguments): objects of the type are then not entities.
 */
export function entityKeyField(type: GraphQLObjectType, keyFields: KeyFields): string | undefined {
  const candidates = Object.hasOwn(keyFields.types, type.name) ? keyFields.types[type.name]! : keyFields.defaults;
  const fields = type.getFields();
  const name = candidates.find((candidate) => Object.hasOwn(fields, candidate));
  if (name === undefined) return undefined;
  const field = fields[name]!;
  const valueType = getNullableType(field.type);
  if (!isScalarType(valueType) && !isEnumType(valueType)) return undefined;
  return field.args.some(isRequiredArgument) ? undefined : name;
}

/**
 * How a key value is spelt in an entity tag: strings as they are, anything else as canonical JSON
 * (`42`, `true`), which is how a response's key value reads once serialised. Responses and purges
 * both spell entity tags through this.
 */
export function entityKeyText(value: unknown): string {
  return typeof value === 'string' ? value : canonicalJson(value);
}
