import { describe, expect, it } from 'vitest';
import { rootFieldTypeTags } from '../../src/invalidation/rootFieldTypes.js';
import { invalidationTag as tag } from '../../src/invalidation/tags.js';
import { prepare, schema, spreadChain } from './fixtures.js';

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
});
