import { getNamedType, isAbstractType, isObjectType, Kind, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { collectFields, fragmentsOf } from '../graphql/index.js';
import type { PreparedOperation } from './entityFields.js';
import { queriedTypes } from './queriedTypes.js';
import { invalidationTag } from './tags.js';

/**
 * The `type` tags of every object type a mutation's root fields can return: their named return
 * types, interfaces and unions expanded to their possible types. What a mutation stands for when
 * its answer cannot be read (streamed, not GraphQL JSON, encoded, too large, bodiless): svc-cache
 * still knows what the mutation could have changed, and invalidating more than asked is safe,
 * less is not (docs/graphql-caching.md, Invalidation). Linear in the operation's size: the root
 * selection is collected once, each fragment entered once.
 */
export function rootFieldTypeTags(schema: GraphQLSchema, prepared: PreparedOperation): string[] {
  const operation = prepared.document.definitions.find(
    (definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION,
  );
  const root = operation && schema.getRootType(operation.operation);
  if (!operation || !root) return [];
  const rootFields = root.getFields();
  const tags = new Set<string>();
  for (const field of collectFields([operation.selectionSet], fragmentsOf(prepared.document))) {
    const definition = rootFields[field.name.value];
    // A root field the schema lacks (the origin's is newer) may return any type queries hold.
    if (!definition && !field.name.value.startsWith('__')) return [...queriedTypes(schema)].map(invalidationTag.type);
    if (!definition) continue;
    const type = getNamedType(definition.type);
    const objectTypes = isAbstractType(type) ? schema.getPossibleTypes(type) : isObjectType(type) ? [type] : [];
    for (const objectType of objectTypes) tags.add(invalidationTag.type(objectType.name));
  }
  return [...tags];
}
