import { getNullableType, isEnumType, isRequiredArgument, isScalarType, type GraphQLObjectType } from 'graphql';
import type { KeyFields } from '../purge/index.js';

/**
 * The field that identifies objects of the type (DESIGN.md "Entity identity"): the first of its
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
