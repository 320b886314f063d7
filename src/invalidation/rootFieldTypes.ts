import { getNamedType, Kind, type FragmentDefinitionNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { collectFields, fragmentsOf } from '../graphql/index.js';
import type { PreparedOperation } from './entityFields.js';
import { heldTypes, HeldTypesWalk } from './heldTypes.js';
import type { KeyFields } from './keyFields.js';
import { queriedTypes } from './queriedTypes.js';
import { invalidationTag } from './tags.js';

/**
 * The `type` tags of every object type a mutation's root fields can return, and of what those can
 * hold down to entities, as a vacancy is tagged (heldTypes.ts): interfaces and unions expanded to
 * their possible types, and a payload type no query holds (`updateTodo: UpdateTodoPayload`, Relay's
 * convention) walked to the `Todo` in it, which alone names the entries the mutation changed. What a
 * mutation stands for when its answer cannot be read (streamed, not GraphQL JSON, encoded, too
 * large, bodiless): svc-cache still knows what the mutation could have changed, and invalidating
 * more than asked is safe, less is not (docs/graphql-caching.md, Invalidation). Linear in the
 * operation's size: the root selection is collected once, each fragment entered once, and what a
 * type holds is worked out once per schema.
 */
export function rootFieldTypeTags(schema: GraphQLSchema, prepared: PreparedOperation): string[] {
  return rootFieldTypes(schema, prepared).tags;
}

/**
 * The tags of rootFieldTypeTags, which a root field the schema lacks makes every type queries hold,
 * and those of the fields the schema has alone.
 */
export interface RootFieldTypes {
  tags: string[];
  ofKnownFields: string[];
}

export function rootFieldTypes(schema: GraphQLSchema, prepared: PreparedOperation): RootFieldTypes {
  const operation = prepared.document.definitions.find(
    (definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION,
  );
  return operation ? operationsRootFieldTypes(schema, prepared.keyFields, [operation], fragmentsOf(prepared.document)) : NO_TYPES;
}

const NO_TYPES: RootFieldTypes = { tags: [], ofKnownFields: [] };

/**
 * The same for several operations of one document and one kind (the mutations a request svc-cache
 * could not read may run), their root selections collected together: each fragment is entered
 * once however many of them spread it, so the cost stays the document's size (README, Bad input).
 */
export function operationsRootFieldTypes(
  schema: GraphQLSchema,
  keyFields: KeyFields,
  operations: readonly OperationDefinitionNode[],
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
): RootFieldTypes {
  const root = operations[0] && schema.getRootType(operations[0].operation);
  if (!root) return NO_TYPES;
  const rootFields = root.getFields();
  const tags = new Set<string>();
  const held = new HeldTypesWalk((component) => {
    for (const tag of component.typeTags) tags.add(tag);
    return true;
  });
  let unknownField = false;
  for (const field of collectFields(operations.map((operation) => operation.selectionSet), fragments)) {
    const definition = rootFields[field.name.value];
    if (definition) held.walk(heldTypes(schema, keyFields, getNamedType(definition.type)), false);
    else unknownField ||= !field.name.value.startsWith('__');
  }
  // A root field the schema lacks (the origin's is newer) may return any type queries hold.
  const ofKnownFields = [...tags];
  return { tags: unknownField ? [...queriedTypes(schema)].map(invalidationTag.type) : ofKnownFields, ofKnownFields };
}
