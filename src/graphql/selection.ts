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
  isUnionType,
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
 * `Todo` also matches `node(id:) { id }`; and a type as each interface and union it belongs to, so a
 * rule on `Node` or `Account.email` also matches `user(id:) { email }` (an outside audit: a scoped
 * rule on an interface's field did not match the field selected on the type implementing it, and
 * one tenant's answer was stored for all). A field the schema lacks on a type it has, and a type
 * condition naming a type it lacks, count by their names: a rule may name what the origin is about
 * to gain (README, Every key), and a scoped rule written before the deploy must match the query
 * that selects it, or the answer would be stored under another rule's scope.
 */
export interface Selection {
  types: ReadonlySet<string>;
  fields: ReadonlySet<string>;
  /**
   * It selects within a field whose type the schema does not give as an object: one it lacks, one
   * within a fragment on a type it lacks, or one it has as a scalar. What such a field holds has no
   * type svc-cache knows, so no rule naming its type can be matched to it.
   */
  untypedSelection: boolean;
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
      walk.read(definition.selectionSet, root && walk.addType(root), root);
    } else if (definition.kind === Kind.FRAGMENT_DEFINITION) {
      walk.readUnder(definition.typeCondition, definition.selectionSet);
    }
  }
  return { types: walk.types, fields: walk.fields, untypedSelection: walk.untypedSelection };
}

class SelectionWalk {
  readonly types = new Set<string>();
  readonly fields = new Set<string>();
  untypedSelection = false;

  constructor(private readonly schema: GraphQLSchema) {}

  /**
   * The selections of a set whose own type is `type` (undefined where the schema does not say),
   * its fields owned by the type names `owners` (none where the document does not name one either).
   */
  read(selectionSet: SelectionSetNode, owners: readonly string[] | undefined, type: GraphQLOutputType | undefined): void {
    const named = type && getNamedType(type);
    const parent = isCompositeType(named) ? named : undefined;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        for (const owner of owners ?? []) this.addField(owner, selection.name.value);
        const returned = parent && fieldDefinition(this.schema, parent, selection.name.value)?.type;
        const returnedType = returned && getNamedType(returned);
        const returnedOwners = returnedType && this.addType(returnedType);
        if (selection.selectionSet) {
          const typed = isCompositeType(returnedType);
          if (!typed) this.untypedSelection = true;
          this.read(selection.selectionSet, typed ? returnedOwners : undefined, returned);
        }
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (selection.typeCondition) this.readUnder(selection.typeCondition, selection.selectionSet);
        else this.read(selection.selectionSet, owners, named);
      }
    }
  }

  /** A fragment's selections: under its type, or under the name alone of a type the schema lacks. */
  readUnder(condition: NamedTypeNode, selectionSet: SelectionSetNode): void {
    const type = conditionType(this.schema, condition);
    const named = type && getNamedType(type);
    if (isCompositeType(named)) {
      this.read(selectionSet, this.addType(named), type);
    } else if (this.schema.getType(condition.name.value) === undefined) {
      this.types.add(condition.name.value);
      this.read(selectionSet, [condition.name.value], undefined);
    } else {
      // A scalar, enum or input type as a condition: invalid, and no object the answer holds is of it.
      this.read(selectionSet, undefined, undefined);
    }
  }

  /**
   * Adds the type, an abstract type's possible types, and the interfaces and unions each of these
   * belongs to; returns the names of the first two, which own the fields selected on it.
   */
  addType(type: GraphQLNamedType): string[] {
    const owners = isAbstractType(type) ? [type.name, ...this.schema.getPossibleTypes(type).map((possible) => possible.name)] : [type.name];
    for (const name of owners) {
      this.types.add(name);
      for (const abstract of abstractTypesOf(this.schema, name)) this.types.add(abstract);
    }
    return owners;
  }

  /**
   * Adds `owner.name`, and the same field of each interface of the owner's: the field the interface
   * declares, or one it lacks, as a field the schema lacks counts by its name (Selection) and the
   * origin may be adding it to the interface (reviews: `{ Account: [balance] }` matched no
   * `user { balance }` while the schema lacked it on Account, and one tenant's answer went to another).
   */
  private addField(owner: string, name: string): void {
    this.fields.add(`${owner}.${name}`);
    for (const abstract of abstractTypesOf(this.schema, owner)) {
      if (isInterfaceType(this.schema.getType(abstract))) this.fields.add(`${abstract}.${name}`);
    }
  }

}

/** The interfaces a type implements and the unions it is a member of, by name. */
function abstractTypesOf(schema: GraphQLSchema, name: string): readonly string[] {
  let byType = abstractTypesBySchema.get(schema);
  if (byType === undefined) {
    byType = abstractTypesByType(schema);
    abstractTypesBySchema.set(schema, byType);
  }
  return byType.get(name) ?? [];
}

/** Computed once per schema: a walk of every type, as its possible types are (getPossibleTypes). */
function abstractTypesByType(schema: GraphQLSchema): Map<string, string[]> {
  const byType = new Map<string, string[]>();
  const add = (member: string, abstract: string): void => {
    const known = byType.get(member);
    if (known === undefined) byType.set(member, [abstract]);
    else known.push(abstract);
  };
  for (const type of Object.values(schema.getTypeMap())) {
    if (isUnionType(type)) for (const member of type.getTypes()) add(member.name, type.name);
    else if (isObjectType(type) || isInterfaceType(type)) for (const implemented of type.getInterfaces()) add(type.name, implemented.name);
  }
  return byType;
}

const abstractTypesBySchema = new WeakMap<GraphQLSchema, Map<string, string[]>>();

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
