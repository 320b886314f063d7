import { buildSchema, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { prepareOperation } from '../../src/invalidation/entityFields.js';
import { rootFieldTypeTags } from '../../src/invalidation/rootFieldTypes.js';
import { invalidationTag as tag } from '../../src/invalidation/tags.js';
import { keyFields, prepare, schema, spreadChain } from './fixtures.js';

/** What a mutation whose answer cannot be read invalidates: every type its root fields can return. */
describe('rootFieldTypeTags', () => {
  it("names each root field's named return type, under aliases, inline fragments and fragment spreads", () => {
    const prepared = prepare(
      'mutation { renamed: updateTodo(id: "1", title: "x") { id } ... on Mutation { updateUser(id: "u1", name: "y") { id } } ...More } fragment More on Mutation { addTodo(title: "z") { id } __typename }',
    );
    expect(rootFieldTypeTags(schema, prepared).sort()).toEqual([tag.type('Todo'), tag.type('User')]);
  });

  it('names the return type of a root field at the end of a chain of 20,000 spreads', () => {
    const prepared = prepare(spreadChain('mutation { ...F0 }', 'Mutation', 'addTodo(title: "z") { id }'));
    expect(rootFieldTypeTags(schema, prepared)).toEqual([tag.type('Todo')]);
  });

  it('expands interfaces and unions to their possible types', () => {
    expect(rootFieldTypeTags(schema, prepare('{ search(text: "") { __typename } }')).sort()).toEqual(
      [tag.type('Product'), tag.type('Todo'), tag.type('User')],
    );
  });

  it('names nothing for scalar root fields, and every type queries hold for a field the schema does not know', () => {
    expect(rootFieldTypeTags(schema, prepare('{ time }'))).toEqual([]);
    expect(rootFieldTypeTags(schema, prepare('mutation { archiveTodo(id: "1") { id } }'))).toEqual(expect.arrayContaining([tag.type('Todo'), tag.type('User'), tag.type('Product')]));
  });

  it('walks a payload type no query holds to what it carries, down to entities, as Relay mutations return them', () => {
    const payloads = buildSchema(`
      type Query { todos: [Todo!]! viewer: User todosConnection: TodoConnection }
      type Todo { id: ID! title: String! }
      type User { id: ID! settings: Settings }
      type Settings { theme: String! }
      type TodoConnection { edges: [TodoEdge!]! }
      type TodoEdge { node: Todo! }
      type Problem { message: String! }
      type UpdateTodoPayload { todo: Todo problems: [Problem!]! query: Query }
      type SetThemePayload { settings: Settings user: User }
      type CreateTodoPayload { todoEdge: TodoEdge }
      type Mutation { updateTodo(id: ID!): UpdateTodoPayload! setTheme(theme: String!): SetThemePayload! createTodo: CreateTodoPayload todo: Todo }
    `);
    const tags = (query: string) => rootFieldTypeTags(payloads, prepareOperation(payloads, parse(query), keyFields)).sort();
    // The payload's Query is not walked, which would name every type; its own tag names no entry.
    expect(tags('mutation { updateTodo(id: "1") { todo { id } } }')).toEqual([
      tag.type('Problem'),
      tag.type('Query'),
      tag.type('Todo'),
      tag.type('UpdateTodoPayload'),
    ]);
    expect(tags('mutation { setTheme(theme: "dark") { settings { theme } } }')).toEqual([tag.type('SetThemePayload'), tag.type('Settings'), tag.type('User')]);
    expect(tags('mutation { createTodo { todoEdge { node { id } } } }')).toEqual([tag.type('CreateTodoPayload'), tag.type('Todo'), tag.type('TodoEdge')]);
    // An entity is named, not walked: what it holds is named by its own tags.
    expect(tags('mutation { todo { id } }')).toEqual([tag.type('Todo')]);
  });
});
