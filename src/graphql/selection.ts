import {
  TypeInfo,
  getNamedType,
  isAbstractType,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type GraphQLNamedType,
  type GraphQLSchema,
} from 'graphql';

/**
 * What a query selects, in the terms caching rules are written in: type names, and schema
 * coordinates `Type.field`. An interface or union counts as each of its possible types, so a rule on
 * `Todo` also matches `node(id:) { id }`.
 */
export interface Selection {
  types: ReadonlySet<string>;
  fields: ReadonlySet<string>;
}

export function selectionOf(schema: GraphQLSchema, document: DocumentNode): Selection {
  const types = new Set<string>();
  const fields = new Set<string>();
  const typeInfo = new TypeInfo(schema);
  const addType = (type: GraphQLNamedType): string[] => {
    const names = isAbstractType(type) ? [type.name, ...schema.getPossibleTypes(type).map((t) => t.name)] : [type.name];
    for (const name of names) types.add(name);
    return names;
  };
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      OperationDefinition() {
        const root = typeInfo.getType();
        if (root) addType(getNamedType(root));
      },
      Field(node) {
        const parent = typeInfo.getParentType();
        const returned = typeInfo.getType();
        if (!parent || !returned) return;
        for (const owner of addType(parent)) fields.add(`${owner}.${node.name.value}`);
        addType(getNamedType(returned));
      },
    }),
  );
  return { types, fields };
}
