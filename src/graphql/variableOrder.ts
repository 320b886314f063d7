import {
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  isSpecifiedScalarType,
  typeFromAST,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';

/**
 * The variables' text for the cache key. Where the operation's variables are all typed so that no
 * origin sees the order of an object's members (input objects are coerced field by field, in the
 * schema's order; enums and the built-in scalars hold no object), members sorted by key, so clients
 * that build the same input in another order share an entry. Where a custom scalar may receive an
 * object (`JSON`), its members reach the origin's code as sent, which may read their order (an
 * `orderBy: {"b": "ASC", "a": "DESC"}`): the members stay in the order sent (README, Cache key).
 */
export function variablesKeyText(
  variables: { readonly canonicalVariables: string; readonly orderedVariables: string },
  operation: OperationDefinitionNode,
  schema: GraphQLSchema,
): string {
  if (variables.orderedVariables === variables.canonicalVariables) return variables.canonicalVariables;
  return memberOrderUnseen(operation, schema) ? variables.canonicalVariables : variables.orderedVariables;
}

/** Whether no variable of the operation is of a type under which an object's member order reaches the origin's code. */
function memberOrderUnseen(operation: OperationDefinitionNode, schema: GraphQLSchema): boolean {
  const remembered = unseenByOperation.get(operation);
  if (remembered?.schema === schema) return remembered.unseen;
  const seen = new Set<GraphQLNamedType>();
  const unseen = (operation.variableDefinitions ?? []).every((definition) => {
    // A type the schema lacks fails at the origin, or the schema is not the origin's: keep the order.
    const type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
    return type !== undefined && orderUnseenUnder(type, seen);
  });
  unseenByOperation.set(operation, { schema, unseen });
  return unseen;
}

const unseenByOperation = new WeakMap<OperationDefinitionNode, { schema: GraphQLSchema; unseen: boolean }>();

/** Input objects' fields are walked once each (`seen`), so a recursive input type ends. */
function orderUnseenUnder(type: GraphQLInputType, seen: Set<GraphQLNamedType>): boolean {
  if (isNonNullType(type) || isListType(type)) return orderUnseenUnder(type.ofType as GraphQLInputType, seen);
  if (seen.has(type)) return true;
  seen.add(type);
  if (isScalarType(type)) return isSpecifiedScalarType(type);
  if (!isInputObjectType(type)) return true;
  return Object.values(type.getFields()).every((field) => orderUnseenUnder(field.type, seen));
}
