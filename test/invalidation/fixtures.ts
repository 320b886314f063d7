import { buildSchema, execute, parse, type DocumentNode, type GraphQLSchema } from 'graphql';
import { prepareOperation, type PreparedOperation } from '../../src/invalidation/entityFields.js';
import { demoSchemaSDL } from '../support/origin.js';

/** The demo origin's schema, built here from its SDL with this module's own graphql (see src/demo/graphqlRuntime.ts). */
export const schema: GraphQLSchema = buildSchema(demoSchemaSDL);

export const keyFields = { defaults: ['id', '_id'], types: { Product: ['sku'] } };

export function prepare(query: string): PreparedOperation {
  return prepareOperation(schema, parse(query, { noLocation: true }), keyFields);
}

/** The JSON body a graphql-js origin would send for the document, with the demo's seed data. */
export async function originBody(document: DocumentNode, variableValues: Record<string, unknown> = {}): Promise<string> {
  return JSON.stringify(await execute({ schema, document, rootValue: seedRoot(), variableValues }));
}

interface UserRecord {
  __typename: 'User';
  id: string;
  name: string;
  email: string | null;
  todos: () => TodoRecord[];
}

interface TodoRecord {
  __typename: 'Todo';
  id: string;
  title: string;
  done: boolean;
  author: () => UserRecord | null;
}

interface ProductRecord {
  __typename: 'Product';
  sku: string;
  name: string;
  price: number;
}

/** Root resolvers over a fresh copy of the demo's seed: todos 1 to 3, users u1 and u2, products sku-1 and sku-2. */
function seedRoot(): Record<string, unknown> {
  const users: UserRecord[] = [];
  const todos: TodoRecord[] = [];
  const user = (id: string | null): UserRecord | null => users.find((candidate) => candidate.id === id) ?? null;
  const addUser = (id: string, name: string, email: string | null): void => {
    users.push({ __typename: 'User', id, name, email, todos: () => todos.filter((todo) => todo.author()?.id === id) });
  };
  const addTodo = (id: string, title: string, done: boolean, authorId: string | null): TodoRecord => {
    const todo: TodoRecord = { __typename: 'Todo', id, title, done, author: () => user(authorId) };
    todos.push(todo);
    return todo;
  };
  addUser('u1', 'Alice', 'alice@example.com');
  addUser('u2', 'Bob', null);
  addTodo('1', 'Buy milk', false, 'u1');
  addTodo('2', 'Write the report', true, 'u2');
  addTodo('3', 'Walk the dog', false, 'u1');
  const products: ProductRecord[] = [
    { __typename: 'Product', sku: 'sku-1', name: 'Coffee beans', price: 12.5 },
    { __typename: 'Product', sku: 'sku-2', name: 'Green tea', price: 4 },
  ];
  const todo = (id: string): TodoRecord | null => todos.find((candidate) => candidate.id === id) ?? null;
  const matches = (text: string, value: string): boolean => value.toLowerCase().includes(text.toLowerCase());
  return {
    todos: () => todos,
    todo: ({ id }: { id: string }) => todo(id),
    users: () => users,
    user: ({ id }: { id: string }) => user(id),
    me: () => null,
    products: () => products,
    product: ({ sku }: { sku: string }) => products.find((product) => product.sku === sku) ?? null,
    node: ({ id }: { id: string }) => todo(id) ?? user(id),
    search: ({ text }: { text: string }) => [
      ...todos.filter((candidate) => matches(text, candidate.title)),
      ...users.filter((candidate) => matches(text, candidate.name)),
      ...products.filter((product) => matches(text, product.name)),
    ],
    time: () => '2024-01-01T00:00:00.000Z',
    addTodo: ({ title }: { title: string }) => addTodo(String(todos.length + 1), title, false, 'u1'),
    updateTodo: ({ id, title, done }: { id: string; title?: string | null; done?: boolean | null }) => {
      const found = todo(id);
      if (!found) return null;
      if (title != null) found.title = title;
      if (done != null) found.done = done;
      return found;
    },
    deleteTodo: ({ id }: { id: string }) => (todo(id) ? id : null),
    updateProduct: ({ sku, price }: { sku: string; price: number }) => {
      const found = products.find((product) => product.sku === sku);
      if (found) found.price = price;
      return found ?? null;
    },
    updateUser: ({ id, name }: { id: string; name: string }) => {
      const found = user(id);
      if (found) found.name = name;
      return found;
    },
  };
}

/**
 * `operation`, spreading F0, and `fragment Fi on <type> { ...Fi+1 }` for i < 20,000, the last
 * selecting `leaf`: a chain longer than a walk recursing once per spread has call stack for.
 */
export function spreadChain(operation: string, type: string, leaf: string): string {
  const fragments = Array.from({ length: 20_000 }, (_, i) => `fragment F${i} on ${type} { ...F${i + 1} }`);
  return `${operation} ${fragments.join(' ')} fragment F20000 on ${type} { ${leaf} }`;
}
