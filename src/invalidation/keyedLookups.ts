import { getArgumentValues, getNamedType, getNullableType, isCompositeType, isListType, type FieldNode, type GraphQLField, type GraphQLSchema } from 'graphql';
import { possibleObjectTypes } from './heldTypes.js';
import { entityKeyField, entityKeyText, type KeyFields } from './keyFields.js';
import { invalidationTag } from './tags.js';
import { ownedCopy } from '../util/index.js';

/**
 * The entities a field that came back `null` was asked for by their key: `todo(id: "4")` names
 * `Todo:4`, `node(id: "5")` the entity of key 5 of every type the field can return whose key field
 * is `id`. An answer holding such a null ("not found yet") is tagged with them, so that the
 * mutation whose answer returns that entity, and a purge of it by key, invalidate it (without
 * them, only the type's `type` tag named it, which neither emits: docs/graphql-caching.md,
 * Invalidation). A null asked for by other arguments (`user(email: "x")`, `productById(id: "1")`
 * where Product's key is `sku`, `user(id: ID, email: String)` asked by email) may be an entity of
 * any key: the type's `unkeyed` tag, which every entity invalidation of the type names too, and so
 * does an argument whose value cannot be read (`variables`, the operation's coerced variable values,
 * are undefined when they do not coerce).
 * A field returning a list, or without arguments, names none. A key is copied out of the document,
 * whose text it would otherwise keep alive in the tag (tags.ts).
 */
export function lookedUpEntityTags(
  schema: GraphQLSchema,
  definition: GraphQLField<unknown, unknown>,
  node: FieldNode,
  variables: Record<string, unknown> | undefined,
  keyFields: KeyFields,
): string[] {
  const nullable = getNullableType(definition.type);
  if (isListType(nullable) || !isCompositeType(nullable) || definition.args.length === 0) return [];
  const tags: string[] = [];
  let values: Record<string, unknown> | undefined | null = null;
  for (const type of possibleObjectTypes(schema, getNamedType(nullable))) {
    const keyField = entityKeyField(type, keyFields);
    if (keyField === undefined) continue;
    if (!definition.args.some((argument) => argument.name === keyField)) {
      tags.push(invalidationTag.unkeyed(type.name));
      continue;
    }
    if (values === null) values = argumentValues(definition, node, variables);
    const value = values?.[keyField];
    // A key argument left out or null (`user(id: ID, email: String)` asked by email) names no key.
    tags.push(value === null || value === undefined ? invalidationTag.unkeyed(type.name) : invalidationTag.entity(type.name, ownedCopy(entityKeyText(value))));
  }
  return tags;
}

function argumentValues(
  definition: GraphQLField<unknown, unknown>,
  node: FieldNode,
  variables: Record<string, unknown> | undefined,
): Record<string, unknown> | undefined {
  if (variables === undefined) return undefined;
  try {
    return getArgumentValues(definition, node, variables);
  } catch {
    return undefined;
  }
}
