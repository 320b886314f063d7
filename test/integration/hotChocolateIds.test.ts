import { createSchema, createYoga } from 'graphql-yoga';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { demoSchemaSDL } from '../../src/demo/schema.js';
import { startRecordedOriginStack, type RecordedOriginStack } from '../support/recordedOriginStack.js';

/**
 * A text beside an `id` (README, Operations svc-cache cannot see), through the gateway, to an origin
 * that treats `id` as Hot Chocolate does: it keeps each document it ran under the `id` sent with it,
 * and runs the kept document instead of any text sent beside that `id` later. svc-cache sends the
 * text without the `id`, so what runs is the text it keyed and read.
 */
describe("a text beside Hot Chocolate's id", () => {
  let stack: RecordedOriginStack;
  const todos = [{ id: '1', title: 'Write tests' }];
  /** What the origin kept under each `id` it was sent beside a text. */
  const kept = new Map<string, string>();
  /** The request lines and bodies the origin received. */
  let received: string[];
  let send: RecordedOriginStack['send'];

  beforeAll(async () => {
    const yoga = createYoga({
      schema: createSchema({
        typeDefs: demoSchemaSDL,
        resolvers: {
          Query: { todos: () => todos },
          Mutation: {
            updateTodo: (_: unknown, { id, title }: { id: string; title: string }) => Object.assign(todos.find((todo) => todo.id === id)!, { title }),
          },
        },
      }),
      logging: false,
      plugins: [
        {
          onParams: ({ params, setParams }) => {
            const id = (params as { id?: unknown }).id;
            if (typeof id !== 'string') return;
            const known = kept.get(id);
            if (known !== undefined) setParams({ ...params, query: known });
            else if (params.query !== undefined) kept.set(id, params.query);
          },
        },
      ],
    });
    stack = await startRecordedOriginStack(
      (request, response) => void yoga(request, response),
      (originUrl) => [`origin:\n  url: ${originUrl}`, 'schema:\n  file: schema.graphql', 'mutationPolicy: Entity', 'rules:\n  - types: [Query]\n    maxAge: 60'],
      { 'schema.graphql': demoSchemaSDL },
    );
    ({ received, send } = stack);
  });

  afterAll(async () => {
    await stack?.close();
  });

  beforeEach(async () => {
    received.length = 0;
    kept.clear();
    todos[0]!.title = 'Write tests';
    await stack.sidecar.store.invalidateAll();
  });

  it('runs the query svc-cache stores, not a mutation sent earlier beside the same id', async () => {
    const mutation = { id: 'TodosQuery', query: 'mutation { updateTodo(id: "1", title: "Renamed") { id title } }' };
    expect(await send(mutation)).toEqual({ status: 200, cache: 'PASS', body: '{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}' });
    const query = { id: 'TodosQuery', query: '{ todos { id title } }' };
    const answer = '{"data":{"todos":[{"id":"1","title":"Renamed"}]}}';
    expect(await send(query)).toEqual({ status: 200, cache: 'MISS', body: answer });
    expect(await send(query)).toEqual({ status: 200, cache: 'HIT', body: answer });
    expect(kept.size).toBe(0);
    expect(received).toEqual([
      'POST /graphql {"query":"mutation { updateTodo(id: \\"1\\", title: \\"Renamed\\") { id title } }"}',
      'POST /graphql {"query":"{ todos { id title } }"}',
    ]);
  });

  it('leaves the id out of a GET, and of a URL beside a POST body, in any case', async () => {
    kept.set('TodosQuery', 'mutation { updateTodo(id: "1", title: "Renamed") { id title } }');
    const answer = '{"data":{"todos":[{"id":"1","title":"Write tests"}]}}';
    const get = `?query=${encodeURIComponent('{ todos { id title } }')}&Id=TodosQuery`;
    expect(await send(undefined, get)).toEqual({ status: 200, cache: 'MISS', body: answer });
    expect(await send({ query: '{ todos { title id } }' }, '?id=TodosQuery')).toEqual({ status: 200, cache: 'MISS', body: '{"data":{"todos":[{"title":"Write tests","id":"1"}]}}' });
    expect(received.map((line) => line.split(' ').slice(0, 2).join(' '))).toEqual([`GET /graphql?query=${encodeURIComponent('{ todos { id title } }')}`, 'POST /graphql']);
    expect(todos[0]!.title).toBe('Write tests');
  });
});
