import { createHash } from 'node:crypto';
import { ApolloClient, gql, HttpLink, InMemoryCache } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { cacheExchange, Client, fetchExchange } from '@urql/core';
import { persistedExchange } from '@urql/exchange-persisted';
import { GraphQLClient } from 'graphql-request';
import Negotiator from 'negotiator';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  describeExchanges,
  graphQLParameters,
  recordingFetch,
  type RecordedExchange,
  type RecordingFetch,
} from '../support/recordingFetch.js';
import { useStack } from '../support/stack.js';

/**
 * Real GraphQL clients, unmodified, through the development gateway in front of the demo origin
 * (issue 12, "Hit rate across clients" and "Done when"): each client's requests are recorded by the
 * `fetch` it is given, so the test sees what went on the wire and what came back, `svc-cache`
 * header included.
 */

const TITLES_QUERY = 'query TodoTitles { todos { id title __typename } }';
const RENAME_MUTATION =
  'mutation RenameTodo($id: ID!, $title: String!) { updateTodo(id: $id, title: $title) { id title __typename } }';
const SEED_TITLES = ['Buy milk', 'Write the report', 'Walk the dog'];

/** What the demo origin answers TITLES_QUERY with these titles, byte for byte (graphql-http's JSON.stringify). */
function titlesAnswer(titles: readonly string[]): string {
  return JSON.stringify({ data: { todos: titles.map((title, index) => ({ id: String(index + 1), title, __typename: 'Todo' })) } });
}

const titlesData = (titles: readonly string[]) => (JSON.parse(titlesAnswer(titles)) as { data: unknown }).data;

/** The little the tests need from a client: a network-only query and a mutation, resolving to `data`. */
interface ClientUnderTest {
  query(text: string): Promise<unknown>;
  mutate(text: string, variables: Record<string, unknown>): Promise<unknown>;
  close(): void;
}

function urqlClient(url: string, recorder: RecordingFetch, options: { persisted: boolean }): ClientUnderTest {
  const client = new Client({
    url,
    fetch: recorder.fetch,
    exchanges: options.persisted ? [cacheExchange, persistedExchange(), fetchExchange] : [fetchExchange],
  });
  const data = async (result: Promise<{ data?: unknown; error?: Error }>) => {
    const { data, error } = await result;
    if (error) throw error;
    return data;
  };
  return {
    query: (text) => data(client.query(text, {}, { requestPolicy: 'network-only' }).toPromise()),
    mutate: (text, variables) => data(client.mutation(text, variables).toPromise()),
    close: () => undefined,
  };
}

function apolloClient(url: string, recorder: RecordingFetch, options: { persisted: boolean }): ClientUnderTest {
  const http = new HttpLink({ uri: url, fetch: recorder.fetch });
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
  const client = new ApolloClient({
    link: options.persisted ? new PersistedQueryLink({ sha256 }).concat(http) : http,
    cache: new InMemoryCache(),
  });
  return {
    query: async (text) => (await client.query({ query: gql(text), fetchPolicy: 'network-only' })).data,
    mutate: async (text, variables) => (await client.mutate({ mutation: gql(text), variables })).data,
    close: () => client.stop(),
  };
}

const PERSISTED_CLIENTS = [
  ['urql with @urql/exchange-persisted', urqlClient],
  ['Apollo Client with its persisted-queries link', apolloClient],
] as const;

function expectExchanges(exchanges: readonly RecordedExchange[], count: number, what: string): void {
  expect(exchanges.length, `${what}: expected ${count} HTTP exchanges, got:\n${describeExchanges(exchanges)}`).toBe(count);
}

function expectAnswer(exchange: RecordedExchange, cacheStatus: string, body: string, what: string): void {
  expect(
    { status: exchange.status, cacheStatus: exchange.responseHeaders['svc-cache'], body: exchange.responseText },
    `${what}:\n${describeExchanges([exchange])}`,
  ).toEqual({ status: 200, cacheStatus, body });
}

describe.each(PERSISTED_CLIENTS)('%s at default settings, through the gateway', (_name, makeClient) => {
  let recorder: RecordingFetch;
  let client: ClientUnderTest;

  const stack = useStack();
  beforeEach(async () => {
    recorder = recordingFetch();
    client = makeClient(stack().url, recorder, { persisted: true });
    return () => client.close();
  });

  it('registers its query with the APQ dance, then gets HITs for the hash alone', async () => {
    expect(await client.query(TITLES_QUERY)).toEqual(titlesData(SEED_TITLES));
    const dance = recorder.take();
    expectExchanges(dance, 2, 'the first query: the hash alone, then the hash with the query');
    const [hashOnly, withQuery] = dance as [RecordedExchange, RecordedExchange];
    expect(graphQLParameters(hashOnly), describeExchanges([hashOnly])).toEqual({ sha256Hash: expect.any(String) });
    expect(JSON.parse(hashOnly.responseText), describeExchanges([hashOnly])).toMatchObject({
      errors: [{ message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }],
    });
    expect(graphQLParameters(withQuery), describeExchanges([withQuery])).toEqual({
      query: expect.any(String),
      sha256Hash: graphQLParameters(hashOnly).sha256Hash,
    });
    expectAnswer(withQuery, 'MISS', titlesAnswer(SEED_TITLES), 'the query with its hash');
    expect(stack().origin.requestCount(), 'the hash alone never reaches the origin').toBe(1);

    for (let round = 0; round < 2; round += 1) {
      expect(await client.query(TITLES_QUERY)).toEqual(titlesData(SEED_TITLES));
      const [again, ...more] = recorder.take();
      expectExchanges([again!, ...more], 1, 'a registered query: the hash alone');
      expect(graphQLParameters(again!)).toEqual({ sha256Hash: graphQLParameters(hashOnly).sha256Hash });
      expectAnswer(again!, 'HIT', titlesAnswer(SEED_TITLES), 'the hash alone, once registered and cached');
    }
    expect(stack().origin.requestCount()).toBe(1);
  });

  it('sees its own mutation at once: the next query is a MISS with the new data, then HITs again', async () => {
    await client.query(TITLES_QUERY);
    await client.query(TITLES_QUERY);
    expect(recorder.take().at(-1)?.responseHeaders['svc-cache'], 'the query is cached before the mutation').toBe('HIT');

    expect(await client.mutate(RENAME_MUTATION, { id: '1', title: 'Buy oat milk' })).toEqual({
      updateTodo: { id: '1', title: 'Buy oat milk', __typename: 'Todo' },
    });
    const mutation = recorder.take();
    expect(
      stack().origin.requests.filter((request) => request.body.includes('updateTodo')).length,
      `the mutation reaches the origin once:\n${describeExchanges(mutation)}`,
    ).toBe(1);

    const renamed = ['Buy oat milk', ...SEED_TITLES.slice(1)];
    expect(await client.query(TITLES_QUERY)).toEqual(titlesData(renamed));
    const [afterMutation, ...more] = recorder.take();
    expectExchanges([afterMutation!, ...more], 1, 'the query after the mutation');
    expectAnswer(afterMutation!, 'MISS', titlesAnswer(renamed), 'the query after a mutation changed Todo 1');

    expect(await client.query(TITLES_QUERY)).toEqual(titlesData(renamed));
    const [refilled, ...rest] = recorder.take();
    expectExchanges([refilled!, ...rest], 1, 'the query once refilled');
    expectAnswer(refilled!, 'HIT', titlesAnswer(renamed), 'the query once refilled');
  });
});

const FIVE_QUERY = 'query FiveClients { todos { id title done __typename } }';
const FIVE_ANSWER = JSON.stringify({
  data: {
    todos: SEED_TITLES.map((title, index) => ({ id: String(index + 1), title, done: index === 1, __typename: 'Todo' })),
  },
});

/** One client of "five clients, two origin requests", at its default settings. */
interface FiveClient {
  name: string;
  ask(url: string, recorder: RecordingFetch): Promise<unknown>;
  /**
   * Sends a GET without a preflight header, which CSRF-preventing origins (Apollo Server 4) refuse:
   * keyed apart from the POSTs (README, Cache key).
   */
  withoutPreflight?: true;
}

const FIVE_CLIENTS: readonly FiveClient[] = [
  {
    name: 'Apollo Client',
    ask: async (url, recorder) => {
      const client = apolloClient(url, recorder, { persisted: false });
      try {
        return await client.query(FIVE_QUERY);
      } finally {
        client.close();
      }
    },
  },
  { name: 'urql', ask: (url, recorder) => urqlClient(url, recorder, { persisted: false }).query(FIVE_QUERY), withoutPreflight: true },
  {
    name: 'graphql-request',
    ask: (url, recorder) => new GraphQLClient(url, { fetch: recorder.fetch }).request(FIVE_QUERY),
  },
  { name: 'curl-like fetch (Accept */*)', ask: (url, recorder) => postWithAccept(url, recorder, '*/*') },
  {
    name: 'fetch accepting application/graphql-response+json only',
    ask: (url, recorder) => postWithAccept(url, recorder, 'application/graphql-response+json'),
  },
];

async function postWithAccept(url: string, recorder: RecordingFetch, accept: string): Promise<unknown> {
  const response = await recorder.fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept },
    body: JSON.stringify({ query: FIVE_QUERY }),
  });
  return ((await response.json()) as { data?: unknown }).data;
}

function accepts(accept: string | undefined, contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const essence = contentType.split(';')[0]!.trim().toLowerCase();
  return new Negotiator({ headers: { accept: accept ?? '*/*' } }).mediaTypes([essence]).length > 0;
}

describe('five clients asking the same query', () => {
  const stack = useStack();

  const ORDERS = FIVE_CLIENTS.map((first) => [first.name, [first, ...FIVE_CLIENTS.filter((client) => client !== first)]] as const);

  it.each(ORDERS)('cost one origin request for the POSTs and one for urql\'s GET, %s first; each gets the origin\'s body in a type it accepts', async (_first, clients) => {
    const seen: Array<{ client: string; exchange: RecordedExchange }> = [];
    for (const client of clients) {
      const recorder = recordingFetch();
      const data = await client.ask(stack().url, recorder);
      const [exchange, ...more] = recorder.exchanges;
      expectExchanges([exchange!, ...more], 1, client.name);
      seen.push({ client: client.name, exchange: exchange! });
      expect(data, `${client.name} got:\n${describeExchanges([exchange!])}`).toEqual(
        (JSON.parse(FIVE_ANSWER) as { data: unknown }).data,
      );
    }
    const report = seen.map(({ client, exchange }) => `${client}: ${describeExchanges([exchange])}`).join('\n');
    for (const { client, exchange } of seen) {
      expect(exchange.status, `${client}\n${report}`).toBe(200);
      expect(exchange.responseText, `${client} gets the origin's body\n${report}`).toBe(FIVE_ANSWER);
      expect(
        accepts(exchange.requestHeaders.accept, exchange.responseHeaders['content-type']),
        `${client} accepts the content type it got\n${report}`,
      ).toBe(true);
    }
    const firstOfItsKey = (index: number) => clients.findIndex((client) => client.withoutPreflight === clients[index]!.withoutPreflight) === index;
    expect(
      seen.map(({ exchange }) => exchange.responseHeaders['svc-cache']),
      `the first POST and urql's GET are MISSes, the other three HITs\n${report}`,
    ).toEqual(clients.map((_client, index) => (firstOfItsKey(index) ? 'MISS' : 'HIT')));
    expect(stack().origin.requestCount(), `two origin requests for five clients\n${report}`).toBe(2);
  });

  it('serves an answer stored as application/json to a client that accepts only application/graphql-response+json', async () => {
    const recorder = recordingFetch();
    await postWithAccept(stack().url, recorder, 'application/json');
    await postWithAccept(stack().url, recorder, 'application/graphql-response+json');
    const [stored, served] = recorder.exchanges as [RecordedExchange, RecordedExchange];
    const report = describeExchanges(recorder.exchanges);
    expect(stored.responseHeaders['content-type'], report).toMatch(/^application\/json\b/);
    expectAnswer(served, 'HIT', FIVE_ANSWER, 'the second client');
    expect(served.responseHeaders['content-type'], report).toMatch(/^application\/graphql-response\+json\b/);
    expect(stack().origin.requestCount(), report).toBe(1);
  });
});
