import type { GraphQLFieldResolver, GraphQLSchema } from 'graphql';
import type { DemoData, TodoChanges, TodoRecord, UserRecord } from './data.js';
import { graphql } from './graphqlRuntime.js';

/** Exported as text so that svc-cache can load the demo schema from a file instead of introspecting. */
export const demoSchemaSDL = `interface Node {
  id: ID!
}

type Todo implements Node {
  id: ID!
  title: String!
  done: Boolean!
  author: User
}

type User implements Node {
  id: ID!
  name: String!
  email: String
  todos: [Todo!]!
}

"Keyed by sku: it has no id field."
type Product {
  sku: String!
  name: String!
  price: Float!
}

union SearchResult = Todo | User | Product

type Query {
  "Every todo, or those whose done is the one given."
  todos(done: Boolean): [Todo!]!
  todo(id: ID!): Todo
  users: [User!]!
  user(id: ID!): User
  "The user the authorization header signs in as (Bearer alice or Bearer bob), otherwise null."
  me: User
  products: [Product!]!
  product(sku: String!): Product
  node(id: ID!): Node
  search(text: String!): [SearchResult!]!
  "Different on every call, so a cached answer is easy to tell from a fresh one."
  time: String!
}

type Mutation {
  addTodo(title: String!): Todo!
  updateTodo(id: ID!, title: String, done: Boolean): Todo
  deleteTodo(id: ID!): ID
  updateProduct(sku: String!, price: Float!): Product
  updateUser(id: ID!, name: String!): User
}
`;

/** Built per request: the origin's data and the user the request signs in as. */
export type DemoContext = {
  data: DemoData;
  viewer: UserRecord | null;
};

type NoArgs = Record<string, never>;
type FieldResolver<TSource, TArgs> = (source: TSource, args: TArgs, context: DemoContext) => unknown;

let timeReads = 0;

const resolvers = {
  Query: {
    todos: (_root: unknown, { done }: { done?: boolean | null }, { data }: DemoContext) =>
      data.allTodos().filter((todo) => done == null || todo.done === done),
    todo: (_root: unknown, { id }: { id: string }, { data }: DemoContext) => data.todo(id),
    users: (_root: unknown, _args: NoArgs, { data }: DemoContext) => data.allUsers(),
    user: (_root: unknown, { id }: { id: string }, { data }: DemoContext) => data.user(id),
    me: (_root: unknown, _args: NoArgs, { viewer }: DemoContext) => viewer,
    products: (_root: unknown, _args: NoArgs, { data }: DemoContext) => data.allProducts(),
    product: (_root: unknown, { sku }: { sku: string }, { data }: DemoContext) => data.product(sku),
    node: (_root: unknown, { id }: { id: string }, { data }: DemoContext) => data.node(id),
    search: (_root: unknown, { text }: { text: string }, { data }: DemoContext) => data.search(text),
    // The sequence number keeps two reads within the same millisecond apart.
    time: () => `${new Date().toISOString()}#${++timeReads}`,
  },
  Mutation: {
    addTodo: (_root: unknown, { title }: { title: string }, { data, viewer }: DemoContext) =>
      data.addTodo(title, viewer?.id ?? null),
    updateTodo: (_root: unknown, { id, ...changes }: { id: string } & TodoChanges, { data }: DemoContext) =>
      data.updateTodo(id, changes),
    deleteTodo: (_root: unknown, { id }: { id: string }, { data }: DemoContext) => data.deleteTodo(id),
    updateProduct: (_root: unknown, { sku, price }: { sku: string; price: number }, { data }: DemoContext) =>
      data.updateProduct(sku, price),
    updateUser: (_root: unknown, { id, name }: { id: string; name: string }, { data }: DemoContext) =>
      data.updateUser(id, name),
  },
  Todo: {
    author: (todo: TodoRecord, _args: NoArgs, { data }: DemoContext) =>
      todo.authorId === null ? null : data.user(todo.authorId),
  },
  User: {
    todos: (user: UserRecord, _args: NoArgs, { data }: DemoContext) => data.todosBy(user.id),
  },
} satisfies Record<string, Record<string, FieldResolver<never, never>>>;

/** Built once from the SDL above; every origin instance shares it and passes its own data in the context. */
export const demoSchema: GraphQLSchema = buildDemoSchema();

function buildDemoSchema(): GraphQLSchema {
  const schema = graphql.buildSchema(demoSchemaSDL);
  for (const [typeName, fields] of Object.entries(resolvers)) {
    const type = schema.getType(typeName);
    if (!graphql.isObjectType(type)) throw new Error(`demo schema has no object type ${typeName}`);
    for (const [fieldName, resolve] of Object.entries<FieldResolver<never, never>>(fields)) {
      const field = type.getFields()[fieldName];
      if (!field) throw new Error(`demo schema has no field ${typeName}.${fieldName}`);
      // graphql-js has coerced source and arguments against the SDL before a resolver runs.
      const resolveField: GraphQLFieldResolver<unknown, DemoContext> = (source, args, context) =>
        resolve(source as never, args as never, context);
      field.resolve = resolveField;
    }
  }
  return schema;
}
