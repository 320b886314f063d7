import { buildSchema, execute, parse, type GraphQLSchema } from 'graphql';

/**
 * A Relay-shaped schema and its data, as the outside audit's origin had them: todos listed plainly
 * and through a connection (key-less edges holding the todo, key-less page info), with the
 * connection's `done` argument naming a todo field. `Folder` holds itself, `archive` is a
 * connection that may be `null`, and `createTodo` returns a payload that may: for what a `null`
 * place could have held.
 */
export const CONNECTION_SCHEMA_SDL = `interface Node {
  id: ID!
}

type Todo implements Node {
  id: ID!
  title: String
  done: Boolean
  author: User
}

type User implements Node {
  id: ID!
  name: String
  todos: [Todo!]!
}

type TodoConnection {
  edges: [TodoEdge!]!
  pageInfo: PageInfo!
}

type TodoEdge {
  node: Todo!
  cursor: String
}

type PageInfo {
  hasNextPage: Boolean!
  endCursor: String
}

type CreateTodoPayload {
  todoEdge: TodoEdge
}

type Folder {
  name: String
  todo: Todo
  children: [Folder!]!
}

type Query {
  todosConnection(first: Int, done: Boolean): TodoConnection!
  archive: TodoConnection
  todos: [Todo!]!
  folder: Folder
  node(id: ID!): Node
}

type Mutation {
  updateTodo(id: ID!, done: Boolean): Todo
  addTodo(title: String): Todo
  createTodo(title: String): CreateTodoPayload
}
`;

export const connectionSchema: GraphQLSchema = buildSchema(CONNECTION_SCHEMA_SDL);

interface TodoRecord {
  id: string;
  title: string;
  done: boolean;
}

/** An origin over todos 1 and 2, both open: the JSON body it answers a request body with. */
export function connectionOrigin(): (requestBody: string) => Promise<string> {
  const todos: TodoRecord[] = [
    { id: '1', title: 'Buy milk', done: false },
    { id: '2', title: 'Walk the dog', done: false },
  ];
  const rootValue = {
    todos: () => todos,
    todosConnection: ({ first, done }: { first?: number | null; done?: boolean | null }) => {
      const found = todos.filter((todo) => done == null || todo.done === done).slice(0, first ?? undefined);
      return { edges: found.map((node) => ({ node, cursor: node.id })), pageInfo: { hasNextPage: false, endCursor: found.at(-1)?.id ?? null } };
    },
    archive: () => null,
    folder: () => null,
    updateTodo: ({ id, done }: { id: string; done?: boolean | null }) => {
      const todo = todos.find((candidate) => candidate.id === id);
      if (todo && done != null) todo.done = done;
      return todo ?? null;
    },
    addTodo: ({ title }: { title?: string | null }) => {
      const todo = { id: String(todos.length + 1), title: title ?? '', done: false };
      todos.push(todo);
      return todo;
    },
  };
  return async (requestBody) => {
    const { query, variables } = JSON.parse(requestBody) as { query: string; variables?: Record<string, unknown> };
    return JSON.stringify(await execute({ schema: connectionSchema, document: parse(query), rootValue, variableValues: variables ?? {} }));
  };
}
