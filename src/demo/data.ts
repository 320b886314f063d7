/**
 * The demo origin's in-memory Todo domain. Records carry `__typename` so that graphql-js resolves
 * the `Node` interface and the `SearchResult` union without a hand-written type resolver.
 */

export interface TodoRecord {
  __typename: 'Todo';
  id: string;
  title: string;
  done: boolean;
  authorId: string | null;
}

export interface UserRecord {
  __typename: 'User';
  id: string;
  name: string;
  email: string | null;
  /** The bearer token that signs in as this user (`authorization: Bearer <token>`). */
  token: string;
}

export interface ProductRecord {
  __typename: 'Product';
  sku: string;
  name: string;
  price: number;
}

export type SearchResultRecord = TodoRecord | UserRecord | ProductRecord;

export interface TodoChanges {
  title?: string | null;
  done?: boolean | null;
}

export class DemoData {
  private todos = new Map<string, TodoRecord>();
  private users = new Map<string, UserRecord>();
  private products = new Map<string, ProductRecord>();
  private nextTodoId = 1;

  constructor() {
    this.reset();
  }

  /** Back to the seed: todos "1" to "3", users alice ("u1") and bob ("u2"), products "sku-1" and "sku-2". */
  reset(): void {
    this.users = byKey(
      [
        { __typename: 'User', id: 'u1', name: 'Alice', email: 'alice@example.com', token: 'alice' },
        { __typename: 'User', id: 'u2', name: 'Bob', email: 'bob@example.com', token: 'bob' },
      ],
      (user) => user.id,
    );
    this.todos = byKey(
      [
        { __typename: 'Todo', id: '1', title: 'Buy milk', done: false, authorId: 'u1' },
        { __typename: 'Todo', id: '2', title: 'Write the report', done: true, authorId: 'u2' },
        { __typename: 'Todo', id: '3', title: 'Walk the dog', done: false, authorId: 'u1' },
      ],
      (todo) => todo.id,
    );
    this.products = byKey(
      [
        { __typename: 'Product', sku: 'sku-1', name: 'Coffee beans', price: 12.5 },
        { __typename: 'Product', sku: 'sku-2', name: 'Green tea', price: 4.25 },
      ],
      (product) => product.sku,
    );
    this.nextTodoId = this.todos.size + 1;
  }

  allTodos(): TodoRecord[] {
    return [...this.todos.values()];
  }

  todo(id: string): TodoRecord | null {
    return this.todos.get(id) ?? null;
  }

  todosBy(userId: string): TodoRecord[] {
    return this.allTodos().filter((todo) => todo.authorId === userId);
  }

  allUsers(): UserRecord[] {
    return [...this.users.values()];
  }

  user(id: string): UserRecord | null {
    return this.users.get(id) ?? null;
  }

  /** The user an `authorization` header value signs in as, or null for anything else. */
  userByAuthorization(authorization: string | undefined): UserRecord | null {
    const token = /^Bearer\s+(\S+)$/i.exec(authorization?.trim() ?? '')?.[1];
    if (token === undefined) return null;
    return this.allUsers().find((user) => user.token === token) ?? null;
  }

  allProducts(): ProductRecord[] {
    return [...this.products.values()];
  }

  product(sku: string): ProductRecord | null {
    return this.products.get(sku) ?? null;
  }

  /** Todos and users share one id space, so an id names at most one node. */
  node(id: string): TodoRecord | UserRecord | null {
    return this.todo(id) ?? this.user(id);
  }

  /** Case-insensitive substring match on todo titles, user names and product names. */
  search(text: string): SearchResultRecord[] {
    const needle = text.toLowerCase();
    const matches = (value: string) => value.toLowerCase().includes(needle);
    return [
      ...this.allTodos().filter((todo) => matches(todo.title)),
      ...this.allUsers().filter((user) => matches(user.name)),
      ...this.allProducts().filter((product) => matches(product.name)),
    ];
  }

  addTodo(title: string, authorId: string | null): TodoRecord {
    const todo: TodoRecord = { __typename: 'Todo', id: String(this.nextTodoId++), title, done: false, authorId };
    this.todos.set(todo.id, todo);
    return todo;
  }

  /** Absent or null changes leave the field as it is; both fields are non-null in the schema. */
  updateTodo(id: string, changes: TodoChanges): TodoRecord | null {
    const todo = this.todos.get(id);
    if (!todo) return null;
    if (changes.title != null) todo.title = changes.title;
    if (changes.done != null) todo.done = changes.done;
    return todo;
  }

  deleteTodo(id: string): string | null {
    return this.todos.delete(id) ? id : null;
  }

  updateProduct(sku: string, price: number): ProductRecord | null {
    const product = this.products.get(sku);
    if (!product) return null;
    product.price = price;
    return product;
  }

  updateUser(id: string, name: string): UserRecord | null {
    const user = this.users.get(id);
    if (!user) return null;
    user.name = name;
    return user;
  }
}

function byKey<T>(records: T[], keyOf: (record: T) => string): Map<string, T> {
  return new Map(records.map((record) => [keyOf(record), record]));
}
