import { getArgumentValues, getNamedType, getNullableType, isCompositeType, isListType, type FieldNode, type GraphQLField, type GraphQLSchema } from 'graphql';
import { possibleObjectTypes } from './heldTypes.js';
import { entityKeyField, entityKeyText, type KeyFields } from './keyFields.js';
import { invalidationTag } from './tags.js';

/**
 * The entities a field that came back `null` was asked for by their key: `todo(id: "4")` names
 * `Todo:4`, `node(id: "5")` the entity of key 5 of every type the field can return whose key field
 * is `id`. An answer holding such a null ("not found yet") is tagged with them, so that the
 * mutation whose answer returns that entity, and a purge of it by key, invalidate it (without
 * them, only the type's `type` tag named it, which neither emits: docs/graphql-caching.md,
 * Invalidation). A field returning a list, or with no argument named as a key field, names none.
 * `variables` are the operation's coerced variable values; undefined when they do not coerce, and
 * then, as for an argument whose value cannot be read, the type's `unkeyed` tag stands in, which
 * every entity invalidation of the type names too.
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
    if (keyField === undefined || !definition.args.some((argument) => argument.name === keyField)) continue;
    if (values === null) values = argumentValues(definition, node, variables);
    const value = values?.[keyField];
    if (values === undefined) tags.push(invalidationTag.unkeyed(type.name));
    else if (value !== null && value !== undefined) tags.push(invalidationTag.entity(type.name, entityKeyText(value)));
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
