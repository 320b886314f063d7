import { TypeInfo, buildSchema, getNamedType, isAbstractType, isInterfaceType, isObjectType, isUnionType, parse, visit, visitWithTypeInfo, type DocumentNode, type GraphQLNamedType, type GraphQLSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { selectionOf } from '../../src/graphql/selection.js';

const schema = buildSchema(`
  interface Node { id: ID! }
  interface Entry implements Node { id: ID! title: String }
  type Todo implements Node & Entry { id: ID! title: String author: User tags: [String!]! }
  type User implements Node { id: ID! name: String todos(first: Int): [Todo!]! }
  union SearchResult = Todo | User
  input TodoFilter { done: Boolean }
  type Query { node(id: ID!): Node search(text: String!): [SearchResult!]! todos(filter: TodoFilter): [Todo!]! me: User }
  type Mutation { addTodo(title: String!): Todo }
`);

/** What graphql-js's own TypeInfo says a document selects: the walk selectionOf must agree with. */
function typeInfoSelection(schema: GraphQLSchema, document: DocumentNode): { types: Set<string>; fields: Set<string> } {
  const types = new Set<string>();
  const fields = new Set<string>();
  const typeInfo = new TypeInfo(schema);
  // Each type also as the interfaces and unions it belongs to.
  const supertypes = (type: GraphQLNamedType): string[] => [
    ...(isObjectType(type) || isInterfaceType(type) ? type.getInterfaces().map((implemented) => implemented.name) : []),
    ...Object.values(schema.getTypeMap()).filter((union) => isUnionType(union) && union.getTypes().includes(type as never)).map((union) => union.name),
  ];
  const addType = (type: GraphQLNamedType): GraphQLNamedType[] => {
    const owners = isAbstractType(type) ? [type, ...schema.getPossibleTypes(type)] : [type];
    for (const owner of owners) for (const name of [owner.name, ...supertypes(owner)]) types.add(name);
    return owners;
  };
  // A field also as the same field of each interface of its owner's.
  const addField = (owner: GraphQLNamedType, name: string): void => {
    fields.add(`${owner.name}.${name}`);
    for (const implemented of isObjectType(owner) || isInterfaceType(owner) ? owner.getInterfaces() : []) fields.add(`${implemented.name}.${name}`);
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
        for (const owner of addType(parent)) addField(owner, node.name.value);
        addType(getNamedType(returned));
      },
    }),
  );
  return { types, fields };
}

const sorted = (selection: { types: ReadonlySet<string>; fields: ReadonlySet<string> }) => ({ types: [...selection.types].sort(), fields: [...selection.fields].sort() });
const within = (query: string): boolean => selectionOf(schema, parse(query)).untypedSelection;

describe('selectionOf', () => {
  it('names the types and fields a query selects, an abstract type as each of its possible types', () => {
    expect(sorted(selectionOf(schema, parse('{ node(id: 1) { id ... on Todo { title } } }')))).toEqual({
      types: ['Entry', 'ID', 'Node', 'Query', 'SearchResult', 'String', 'Todo', 'User'],
      fields: ['Entry.id', 'Entry.title', 'Node.id', 'Node.title', 'Query.node', 'Todo.id', 'Todo.title', 'User.id'],
    });
  });

  // An outside audit: a scoped rule on an interface's field (`{ Account: [email] }`) did not match
  // `user { email }` on a type implementing it, and one tenant's answer was stored for all.
  // A review: also a field the interface lacks (`Node.name`), which the origin may be adding to it.
  it('names a type also as each interface and union it belongs to, and a field also on each such interface', () => {
    expect(sorted(selectionOf(schema, parse('{ todos { title author { name } } }')))).toEqual({
      types: ['Entry', 'Node', 'Query', 'SearchResult', 'String', 'Todo', 'User'],
      fields: ['Entry.author', 'Entry.title', 'Node.author', 'Node.name', 'Node.title', 'Query.todos', 'Todo.author', 'Todo.title', 'User.name'],
    });
  });

  it.each([
    ['an interface implementing another, and fragments on either', '{ node(id: 1) { ... on Entry { title ... on Node { id } } } }'],
    ['nested lists and arguments', '{ me { name todos(first: 2) { id tags author { name } } } }'],
    ['a union, its __typename and fragments on its members', '{ search(text: "a") { __typename ... on User { name } ... on Todo { title } } }'],
    ['meta fields on the query root and elsewhere', '{ __typename __schema { types { name } } __type(name: "Todo") { name } me { __typename } }'],
    ['fragment definitions, used or not, and spreads not followed', 'query Q { me { ...U } } fragment U on User { name todos { ...T } } fragment T on Todo { title } fragment N on Node { id }'],
    ['a selection set on a scalar, and inline fragments without a condition', '{ me { name { length } ... { id ... { name } } } }'],
    ['a mutation, and an operation type the schema lacks', 'mutation { addTodo(title: "a") { id author { id } } } subscription S { me { id } }'],
    ['type-system definitions beside the operation', 'type Extra { me: User } { todos { id } }'],
  ])('reads %s as TypeInfo does', (_, query) => {
    const document = parse(query);
    expect(sorted(selectionOf(schema, document))).toEqual(sorted(typeInfoSelection(schema, document)));
  });

  // The audit's reproduction: a scoped rule on `Query.teamBalance`, written before the origin's
  // deploy, matched nothing, and the answer was stored under the `[Query]` rule's PUBLIC.
  it('names a field the schema lacks on a type it has, as rules name it', () => {
    expect(sorted(selectionOf(schema, parse('{ teamBalance me { nope { ... on User { name } } __schema { x } } }')))).toEqual({
      types: ['Node', 'Query', 'SearchResult', 'String', 'User'],
      fields: ['Node.__schema', 'Node.name', 'Node.nope', 'Query.me', 'Query.teamBalance', 'User.__schema', 'User.name', 'User.nope'],
    });
  });

  // The reviews: a rule on the type such a field returns cannot be matched, so the query is not cached.
  it('says whether it selects within a field the schema gives no object type: lacked, under a type it lacks, or a scalar', () => {
    const queries = ['{ nope { id } }', '{ me { nope { id } } }', '{ me { ... on Missing { balance { amount } } } }', 'query { ...F } fragment F on Later { balance { amount } }', '{ me { name { length } } }'];
    expect(queries.map(within)).toEqual([true, true, true, true, true]);
    expect(['{ nope me { id } }', '{ me { ... on Missing { id } } }', '{ me { id ... on User { name } } }'].map(within)).toEqual([false, false, false]);
  });

  it('names what an unknown field holds only through the type conditions of its fragments', () => {
    expect(sorted(selectionOf(schema, parse('{ nope { id ... on Todo { title } ... { name } } }')))).toEqual({
      types: ['Entry', 'Node', 'Query', 'SearchResult', 'String', 'Todo'],
      fields: ['Entry.title', 'Node.title', 'Query.nope', 'Todo.title'],
    });
  });

  it('names a fragment on a type the schema lacks, and what it selects, by their names; not an input or scalar condition', () => {
    const query = '{ me { ... on Missing { id secret } ... on TodoFilter { done } ... on String { x } } } fragment F on Later { id }';
    expect(sorted(selectionOf(schema, parse(query)))).toEqual({
      types: ['Later', 'Missing', 'Node', 'Query', 'SearchResult', 'User'],
      fields: ['Later.id', 'Missing.id', 'Missing.secret', 'Query.me'],
    });
  });
});
