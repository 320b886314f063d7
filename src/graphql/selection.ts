import {
  Kind,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  TypeNameMetaFieldDef,
  getNamedType,
  isAbstractType,
  isCompositeType,
  isInterfaceType,
  isObjectType,
  isOutputType,
  typeFromAST,
  type DocumentNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type NamedTypeNode,
  type SelectionSetNode,
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

/**
 * Every operation and fragment definition of the document is read once, fragment spreads not
 * followed, with the types graphql-js's TypeInfo would give each field (the test holds the two
 * alike). A walk of its own: graphql's `visit` with TypeInfo took about a third of the CPU that
 * checking a new document's limits and rules did (docs/performance.md, What a MISS adds).
 */
export function selectionOf(schema: GraphQLSchema, document: DocumentNode): Selection {
  const walk = new SelectionWalk(schema);
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION) {
      const root = schema.getRootType(definition.operation) ?? undefined;
      if (root) walk.addType(root);
      walk.read(definition.selectionSet, root);
    } else if (definition.kind === Kind.FRAGMENT_DEFINITION) {
      walk.read(definition.selectionSet, conditionType(schema, definition.typeCondition));
    }
  }
  return { types: walk.types, fields: walk.fields };
}

class SelectionWalk {
  readonly types = new Set<string>();
  readonly fields = new Set<string>();

  constructor(private readonly schema: GraphQLSchema) {}

  /** The selections of a set whose own type is `type` (undefined where the schema does not say). */
  read(selectionSet: SelectionSetNode, type: GraphQLOutputType | undefined): void {
    const named = type && getNamedType(type);
    const parent = isCompositeType(named) ? named : undefined;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        const returned = parent && fieldDefinition(this.schema, parent, selection.name.value)?.type;
        if (parent && returned) {
          for (const owner of this.addType(parent)) this.fields.add(`${owner}.${selection.name.value}`);
          this.addType(getNamedType(returned));
        }
        if (selection.selectionSet) this.read(selection.selectionSet, returned);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        this.read(selection.selectionSet, selection.typeCondition ? conditionType(this.schema, selection.typeCondition) : named);
      }
    }
  }

  /** Adds the type, and an abstract type's possible types; returns the names added. */
  addType(type: GraphQLNamedType): string[] {
    const names = isAbstractType(type) ? [type.name, ...this.schema.getPossibleTypes(type).map((possible) => possible.name)] : [type.name];
    for (const name of names) this.types.add(name);
    return names;
  }
}

function conditionType(schema: GraphQLSchema, condition: NamedTypeNode): GraphQLOutputType | undefined {
  const type = typeFromAST(schema, condition);
  return isOutputType(type) ? type : undefined;
}

/** As TypeInfo finds a field's definition: the meta fields first, then the type's own. */
function fieldDefinition(schema: GraphQLSchema, parent: GraphQLCompositeType, name: string): GraphQLField<unknown, unknown> | undefined {
  if (name === SchemaMetaFieldDef.name && schema.getQueryType() === parent) return SchemaMetaFieldDef;
  if (name === TypeMetaFieldDef.name && schema.getQueryType() === parent) return TypeMetaFieldDef;
  if (name === TypeNameMetaFieldDef.name) return TypeNameMetaFieldDef;
  return isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[name] : undefined;
}
