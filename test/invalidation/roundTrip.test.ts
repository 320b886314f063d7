import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { stripAddedFields } from '../../src/invalidation/entityFields.js';
import { originBody, prepare } from './fixtures.js';

/**
 * The rewritten operation, executed by graphql-js and stripped, must give the bytes the client's own
 * operation would have got.
 */
const operations: Array<{ name: string; query: string; variables?: Record<string, unknown> }> = [
  { name: 'nested lists', query: '{ users { name email todos { title author { name } } } products { name price } }' },
  {
    name: 'aliases, one of them the key\'s name',
    query: '{ a: todo(id: "1") { id: title done } b: todo(id: "2") { who: author { id: name } } }',
  },
  {
    name: 'interfaces and unions',
    query: '{ node(id: "u2") { ... on User { name } } search(text: "e") { ... on Todo { title } ... on Product { price } } }',
  },
  {
    name: 'named and inline fragments',
    query: `query Page { todos { ...TodoParts ... on Todo { author { ...Named } } } }
fragment TodoParts on Todo { title done }
fragment Named on User { name }`,
  },
  {
    name: '@include and @skip with variables',
    query: `query ($with: Boolean!, $without: Boolean!) {
  todos { id @include(if: $with) title @skip(if: $without) author @include(if: $with) { name } }
  users @skip(if: $with) { name }
}`,
    variables: { with: false, without: true },
  },
  {
    name: 'a null result and an empty list',
    query: '{ me { name } todo(id: "9") { title } search(text: "zzz") { ... on User { name } } }',
  },
  {
    name: 'a mutation',
    query: 'mutation { updateTodo(id: "3", done: true) { done author { name } } updateProduct(sku: "sku-1", price: 9.75) { name } }',
  },
];

describe('rewrite and strip round trip', () => {
  it.each(operations)('gives the client\'s own answer: $name', async ({ query, variables }) => {
    const prepared = prepare(query);
    expect(prepared.rewritten).toBe(true);
    const rewrittenBody = await originBody(parse(prepared.query), variables);
    expect(JSON.parse(rewrittenBody)).not.toHaveProperty('errors');
    const clientBody = await originBody(parse(query), variables);
    expect(stripAddedFields(prepared, Buffer.from(rewrittenBody)).toString()).toBe(clientBody);
  });
});
