import { createHash } from 'node:crypto';
import { ApolloClient, gql, HttpLink, InMemoryCache } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { addTypenameToDocument } from '@apollo/client/utilities';
import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations';
import { print } from 'graphql';
import { createSchema, createYoga } from 'graphql-yoga';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { demoSchemaSDL } from '../../src/demo/schema.js';
import type { Gateway } from '../../src/gateway/index.js';
import { startRecordedOriginStack, type RecordedOriginStack } from '../support/recordedOriginStack.js';

/**
 * Stored documents sent by id (README, Stored documents sent by id), through the gateway, to GraphQL
 * Yoga running trusted documents only (its persisted-operations plugin, arbitrary operations
 * refused): svc-cache reads the origin's manifest, in Apollo's format, from its configuration, and
 * forwards each request as the client sent it, since this origin would refuse the text.
 */

/** What Apollo Client sends for APOLLO_QUERY: its cache adds `__typename`, as Apollo's manifest generator does. */
const APOLLO_QUERY = 'query ApolloTitles { todos { id title } }';
const DOCUMENTS = {
  apolloTitles: print(addTypenameToDocument(gql(APOLLO_QUERY))),
  todoTitles: 'query TodoTitles { todos { id title } }',
  todo: 'query Todo($id: ID!) { todo(id: $id) { id title } }',
  users: 'query Users { users { id name } }',
  /** Without the key: its answer names no todo, so any change to a todo drops it. */
  keylessTitles: 'query KeylessTitles { todos { title } }',
  /** The same field as Todo's, another answer: a request's answer stored under Todo's key would show. */
  titleless: 'query Titleless($id: ID!) { todo(id: $id) { id title: id } }',
  rename: 'mutation Rename($id: ID!, $title: String!) { updateTodo(id: $id, title: $title) { id title } }',
};
/** Apollo's manifest names each document by the SHA-256 of its text. */
const ids = Object.fromEntries(Object.entries(DOCUMENTS).map(([name, body]) => [name, createHash('sha256').update(body).digest('hex')])) as Record<keyof typeof DOCUMENTS, string>;

describe('stored documents sent by id, to an origin that runs ids only', () => {
  let stack: RecordedOriginStack;
  /** The origin's data, set back before each test, as the store is emptied. */
  const todos = [{ id: '1', title: 'Write tests' }];
  /** The bodies and query strings the origin received. */
  let received: string[];
  let send: RecordedOriginStack['send'];
  let gateway: Gateway;

  beforeAll(async () => {
    const byId = new Map(Object.entries(DOCUMENTS).map(([name, body]) => [ids[name as keyof typeof DOCUMENTS], body]));
    const yoga = createYoga({
      schema: createSchema({
        typeDefs: demoSchemaSDL,
        resolvers: {
          Query: { users: () => [{ id: 'u1', name: 'Ada' }], todos: () => todos, todo: (_: unknown, { id }: { id: string }) => todos.find((todo) => todo.id === id) ?? null },
          Mutation: {
            updateTodo: (_: unknown, { id, title }: { id: string; title: string }) => Object.assign(todos.find((todo) => todo.id === id)!, { title }),
          },
        },
      }),
      logging: false,
      plugins: [
        usePersistedOperations({
          getPersistedOperation: (id) => byId.get(id) ?? null,
          allowArbitraryOperations: false,
          // Apollo's persisted-query hash whatever its version says (as Apollo Router reads it), else
          // GraphQL over HTTP's documentId, in the body or the URL.
          extractPersistedOperationId: (params, request) =>
            ((params.extensions?.persistedQuery as { sha256Hash?: string } | undefined)?.sha256Hash ??
              (params as { documentId?: string }).documentId ??
              new URL(request.url).searchParams.get('documentId')) ||
            null,
        }),
      ],
    });
    const manifest = {
      format: 'apollo-persisted-query-manifest',
      version: 1,
      operations: Object.entries(DOCUMENTS).map(([name, body]) => ({ id: ids[name as keyof typeof DOCUMENTS], name, type: body.split(' ')[0], body })),
    };
    stack = await startRecordedOriginStack(
      (request, response) => void yoga(request, response),
      (originUrl) => [
        `origin:\n  url: ${originUrl}`,
        'schema:\n  file: schema.graphql',
        'persistedDocuments:\n  manifest: persisted-query-manifest.json',
        'mutationPolicy: Entity',
        'rules:\n  - types: [Query]\n    maxAge: 60',
      ],
      { 'persisted-query-manifest.json': JSON.stringify(manifest), 'schema.graphql': demoSchemaSDL },
    );
    ({ received, send, gateway } = stack);
  });

  afterAll(async () => {
    await stack?.close();
  });

  beforeEach(async () => {
    received.length = 0;
    todos[0]!.title = 'Write tests';
    await stack.sidecar.store.invalidateAll();
  });

  it('caches a query sent by documentId, the origin getting the request as sent', async () => {
    const body = { documentId: ids.todoTitles };
    const answer = '{"data":{"todos":[{"id":"1","title":"Write tests"}]}}';
    expect(await send(body)).toEqual({ status: 200, cache: 'MISS', body: answer });
    expect(await send(body)).toEqual({ status: 200, cache: 'HIT', body: answer });
    expect(received).toEqual([`POST /graphql ${JSON.stringify(body)}`]);
  });

  it("caches a GET by documentId and an Apollo persisted-query hash, which svc-cache's own APQ registry never saw", async () => {
    const get = `?documentId=${ids.todo}&variables=${encodeURIComponent('{"id":"1"}')}`;
    const hashOnly = { variables: { id: '1' }, extensions: { persistedQuery: { version: 1, sha256Hash: ids.todo } } };
    const answer = '{"data":{"todo":{"id":"1","title":"Write tests"}}}';
    for (const sent of [() => send(undefined, get), () => send(hashOnly)]) {
      expect(await sent()).toEqual({ status: 200, cache: 'MISS', body: answer });
      expect(await sent()).toEqual({ status: 200, cache: 'HIT', body: answer });
    }
    expect(received).toEqual([`GET /graphql${get} `, `POST /graphql ${JSON.stringify(hashOnly)}`]);
  });

  it('invalidates what a mutation sent by id changed, and only that', async () => {
    const todo = { documentId: ids.todo, variables: { id: '1' } };
    const titles = { documentId: ids.todoTitles };
    const keyless = { documentId: ids.keylessTitles };
    const users = { documentId: ids.users };
    await send(todo);
    await send(titles);
    expect(await send(keyless)).toEqual({ status: 200, cache: 'MISS', body: '{"data":{"todos":[{"title":"Write tests"}]}}' });
    expect((await send(keyless)).cache).toBe('HIT');
    await send(users);
    const rename = await send({ documentId: ids.rename, variables: { id: '1', title: 'Renamed' } });
    expect(rename).toEqual({ status: 200, cache: 'PASS', body: '{"data":{"updateTodo":{"id":"1","title":"Renamed"}}}' });
    expect(await send(todo)).toEqual({ status: 200, cache: 'MISS', body: '{"data":{"todo":{"id":"1","title":"Renamed"}}}' });
    expect(await send(titles)).toEqual({ status: 200, cache: 'MISS', body: '{"data":{"todos":[{"id":"1","title":"Renamed"}]}}' });
    expect(await send(keyless)).toEqual({ status: 200, cache: 'MISS', body: '{"data":{"todos":[{"title":"Renamed"}]}}' });
    // Without the manifest the mutation would be one svc-cache cannot see, and would empty the store.
    expect(await send(users)).toEqual({ status: 200, cache: 'HIT', body: '{"data":{"users":[{"id":"u1","name":"Ada"}]}}' });
  });

  it('refuses a documentId beside a persisted-query reference of another shape, which some origins would run instead', async () => {
    const todo = { documentId: ids.todo, variables: { id: '1' } };
    const refusal = { status: 400, cache: null, body: '{"errors":[{"message":"Unsupported persisted query version","extensions":{"code":"BAD_REQUEST"}}]}' };
    for (const [version, hash] of [[2, ids.titleless], [0, ids.rename]] as const) {
      expect(await send({ ...todo, extensions: { persistedQuery: { version, sha256Hash: hash } } })).toEqual(refusal);
    }
    expect(await send(todo)).toEqual({ status: 200, cache: 'MISS', body: '{"data":{"todo":{"id":"1","title":"Write tests"}}}' });
    expect(received).toEqual([`POST /graphql ${JSON.stringify(todo)}`]);
  });

  it('passes an id the manifest lacks to the origin, which answers it, in either form', async () => {
    const unknownHash = { extensions: { persistedQuery: { version: 1, sha256Hash: 'f'.repeat(64) } } };
    for (const body of [{ documentId: 'not-in-the-manifest' }, unknownHash]) {
      const unknown = await send(body);
      expect([unknown.status, unknown.cache]).toEqual([200, 'PASS']);
      expect(JSON.parse(unknown.body)).toMatchObject({ errors: [{ message: 'PersistedQueryNotFound' }] });
    }
    expect(received).toEqual([`POST /graphql ${JSON.stringify({ documentId: 'not-in-the-manifest' })}`, `POST /graphql ${JSON.stringify(unknownHash)}`]);
  });

  it('serves Apollo Client with its persisted-queries link from the manifest: no hash refused, HITs from the second query', async () => {
    const recorded: string[] = [];
    const fetchRecorded: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      recorded.push(`${response.headers.get('svc-cache')} ${String(init?.body ?? '')}`);
      return response;
    };
    const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
    const client = new ApolloClient({ link: new PersistedQueryLink({ sha256 }).concat(new HttpLink({ uri: `${gateway.url}/graphql`, fetch: fetchRecorded })), cache: new InMemoryCache() });
    try {
      for (let round = 0; round < 2; round += 1) {
        const { data } = await client.query({ query: gql(APOLLO_QUERY), fetchPolicy: 'network-only' });
        expect(data).toEqual({ todos: [{ __typename: 'Todo', id: '1', title: expect.any(String) }] });
      }
    } finally {
      client.stop();
    }
    const hashOnly = recorded[0]!.slice('MISS '.length);
    expect(JSON.parse(hashOnly)).toEqual({
      operationName: 'ApolloTitles',
      variables: {},
      extensions: { clientLibrary: expect.any(Object), persistedQuery: { version: 1, sha256Hash: ids.apolloTitles } },
    });
    expect(recorded).toEqual([`MISS ${hashOnly}`, `HIT ${hashOnly}`]);
    expect(received).toEqual([`POST /graphql ${hashOnly}`]);
  });
});
