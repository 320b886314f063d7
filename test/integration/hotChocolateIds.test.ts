import type { IncomingMessage, ServerResponse } from 'node:http';
import { createSchema, createYoga, type YogaServerInstance } from 'graphql-yoga';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { demoSchemaSDL } from '../../src/demo/schema.js';
import { startRecordedOriginStack, type RecordedOriginStack } from '../support/recordedOriginStack.js';

/**
 * A text beside an `id` (README, Operations svc-cache cannot see), through the gateway, to an origin
 * that treats `id` as Hot Chocolate does: it keeps each document it ran under the `id` sent with it,
 * and runs the kept document instead of any text sent beside that `id` later. svc-cache sends the
 * text without the `id`, so what runs is the text it keyed and read.
 */
/** What the origin kept under each `id` it was sent beside a text. */
const kept = new Map<string, string>();

/**
 * Hot Chocolate's reading of `id`, in front of Yoga (which refuses a body member it does not know):
 * the `id` member or URL parameter (any case) is taken out; a text beside an id it does not know is
 * kept under it, and the kept text runs instead of any text beside a known one.
 */
function hotChocolateIds(request: IncomingMessage, response: ServerResponse, yoga: YogaServerInstance<object, object>): void {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', async () => {
    const url = new URL(request.url!, 'http://origin');
    const urlIds = [...url.searchParams].filter(([name]) => name.toLowerCase() === 'id');
    for (const [name] of urlIds) url.searchParams.delete(name);
    const params = (request.method === 'POST' ? JSON.parse(Buffer.concat(chunks).toString()) : Object.fromEntries(url.searchParams)) as Record<string, unknown>;
    const id = typeof params.id === 'string' ? params.id : urlIds[0]?.[1];
    delete params.id;
    const known = id === undefined ? undefined : kept.get(id);
    if (known !== undefined) params.query = known;
    else if (id !== undefined && typeof params.query === 'string') kept.set(id, params.query);
    const init: RequestInit =
      request.method === 'POST'
        ? { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(params) }
        : { headers: { accept: 'application/json' } };
    if (request.method !== 'POST') url.search = new URLSearchParams(params as Record<string, string>).toString();
    const answer = await yoga.fetch(url.toString(), init);
    response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
    response.end(Buffer.from(await answer.arrayBuffer()));
  });
}

describe("a text beside Hot Chocolate's id", () => {
  let stack: RecordedOriginStack;
  const todos = [{ id: '1', title: 'Write tests' }];
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
    });
    stack = await startRecordedOriginStack(
      (request, response) => void hotChocolateIds(request, response, yoga),
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

  // The review of the header-limit fallback: with headers Envoy's own additions take past its limits,
  // the request went on unchanged, `id` included, and the origin ran the mutation kept under it.
  it('answers 431 where the headers leave no room to leave the id out, rather than send it on', async () => {
    kept.set('TodosQuery', 'mutation { updateTodo(id: "1", title: "Renamed unseen") { id title } }');
    const crowded = Object.fromEntries(Array.from({ length: 95 }, (_, i) => [`x-client-${i}`, 'v']));
    const response = await fetch(`${stack.gateway.url}/graphql`, {
      method: 'POST',
      headers: { ...crowded, accept: 'application/json', 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'TodosQuery', query: '{ todos { id title } }' }),
    });
    expect([response.status, await response.text()]).toEqual([431, '{"errors":[{"message":"The request headers are too large","extensions":{"code":"REQUEST_HEADERS_TOO_LARGE"}}]}']);
    expect([received, todos[0]!.title]).toEqual([[], 'Write tests']);
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
