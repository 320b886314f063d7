import { getNamedType, isAbstractType, isInterfaceType, isObjectType, type GraphQLNamedType, type GraphQLSchema } from 'graphql';

/** Object types a query can reach from the query root: only those can be in a cached answer. */
export function queriedTypes(schema: GraphQLSchema): ReadonlySet<string> {
  let types = queriedTypesBySchema.get(schema);
  if (types === undefined) {
    types = reachableObjectTypes(schema);
    queriedTypesBySchema.set(schema, types);
  }
  return types;
}

const queriedTypesBySchema = new WeakMap<GraphQLSchema, ReadonlySet<string>>();

function reachableObjectTypes(schema: GraphQLSchema): Set<string> {
  const reached = new Set<string>();
  const queryType = schema.getQueryType();
  const pending: GraphQLNamedType[] = queryType ? [queryType] : [];
  for (let type = pending.pop(); type !== undefined; type = pending.pop()) {
    if (reached.has(type.name)) continue;
    reached.add(type.name);
    if (isAbstractType(type)) pending.push(...schema.getPossibleTypes(type));
    if (isObjectType(type) || isInterfaceType(type)) for (const field of Object.values(type.getFields())) pending.push(getNamedType(field.type));
  }
  return new Set([...reached].filter((name) => isObjectType(schema.getType(name)) && name !== queryType?.name));
}
