import { beforeEach, describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { DecisionEngine } from '../../src/engine/engine.js';
import { MemoryStore } from '../../src/store/memory.js';
import { connectionOrigin, connectionSchema } from '../support/connectionOrigin.js';
import { unitEngineDependencies } from '../support/engineDependencies.js';

/**
 * Relay connections through the decision engine, with real tagging and a graphql-js origin that
 * runs what the engine forwards (the outside audit's reproductions; README, Invalidation after
 * mutations): a connection answered empty is named by `Type` and by a purge of its node type, and
 * under `List` a created todo empties the connection pages it fits, as it does plain lists.
 */

const TOKEN = 'purge-token-0123456789';
const page = (args: string): string => `{ todosConnection${args} { edges { node { id title } } } }`;
const [DONE, ALL, FIRST] = [page('(done: true)'), page(''), page('(first: 1)')];
const TODOS = '{ todos { id title } }';

describe('Relay connections through the engine', () => {
  let engine: DecisionEngine;
  let origin: (requestBody: string) => Promise<string>;

  const build = (input: Record<string, unknown>): void => {
    const config = configSchema.parse({ origin: { url: 'http://origin.test/graphql' }, rules: [{ types: ['Query'], maxAge: 60 }], purge: { tokens: [TOKEN] }, ...input });
    const store = new MemoryStore({ maxBytes: 1024 * 1024 });
    engine = new DecisionEngine(unitEngineDependencies(() => ({ config, schema: connectionSchema }), store, () => 1_700_000_000_000));
    origin = connectionOrigin();
  };

  /** The request's outcome, the origin answering what the engine forwarded. */
  async function send(query: string): Promise<string | undefined> {
    const { exchange, body, decision } = await decide(query);
    if (decision.kind === 'forward') {
      const answer = await origin((decision.requestBody ?? body).toString());
      await engine.responseHead(exchange, 200, [[':status', '200'], ['content-type', 'application/json']], false);
      await engine.responseBody(exchange, Buffer.from(answer));
    }
    return exchange.summary().outcome;
  }

  async function decide(query: string, headers: Array<[string, string]> = []) {
    const body = Buffer.from(JSON.stringify({ query }));
    const exchange = engine.begin({ method: 'POST', path: '/graphql', headers: [[':method', 'POST'], [':path', '/graphql'], ['content-type', 'application/json'], ...headers], hasBody: true });
    return { exchange, body, decision: await engine.requestBody(exchange, body) };
  }

  const statuses = async (queries: string[]): Promise<Array<string | undefined>> => {
    const found = [];
    for (const query of queries) found.push(await send(query));
    return found;
  };

  async function warm(queries: string[]): Promise<void> {
    expect(await statuses(queries)).toEqual(queries.map(() => 'MISS'));
    expect(await statuses(queries)).toEqual(queries.map(() => 'HIT'));
  }

  describe('an empty connection page', () => {
    beforeEach(() => build({ mutationPolicy: 'Type' }));

    it('is emptied under Type by an update of any todo', async () => {
      await warm([DONE]);
      expect(await send('mutation { updateTodo(id: "1", done: true) { id title done } }')).toBe('PASS');
      expect(await statuses([DONE, DONE])).toEqual(['MISS', 'HIT']);
    });

    it('is emptied by a purge of the todo type', async () => {
      await warm([DONE]);
      const { decision } = await decide('mutation { _purgeTodo }', [['svc-purge-token', TOKEN]]);
      expect(decision.kind === 'respond' && decision.response.body.toString()).toBe('{"data":{"_purgeTodo":true}}');
      expect(await send(DONE)).toBe('MISS');
    });
  });

  describe('a connection page whose selection reaches no todo (a count, cursors, page info)', () => {
    const SUMMARIES = ['{ todosConnection(done: false) { pageInfo { hasNextPage } } }', '{ todosConnection(done: false) { edges { cursor } } }'];

    it.each(['Entity', 'List', 'Type'] as const)('is emptied under %s by an update that moves a todo out of it', async (mutationPolicy) => {
      build({ mutationPolicy });
      await warm(SUMMARIES);
      expect(await send('mutation { updateTodo(id: "1", done: true) { id done } }')).toBe('PASS');
      expect(await statuses(SUMMARIES)).toEqual(['MISS', 'MISS']);
    });

    it.each(['mutation { _purgeTodo }', 'mutation { purgeTodo(id: "1") }'])('is emptied by %s', async (purge) => {
      build({});
      await warm(SUMMARIES);
      const { decision } = await decide(purge, [['svc-purge-token', TOKEN]]);
      expect(decision.kind).toBe('respond');
      expect(await statuses(SUMMARIES)).toEqual(['MISS', 'MISS']);
    });

    it('is left alone when its selection reaches the todos, which their own tags name', async () => {
      build({});
      await warm([DONE]);
      expect(await send('mutation { updateTodo(id: "3", title: "x") { id title } }')).toBe('PASS');
      expect(await send(DONE)).toBe('HIT');
    });
  });

  describe('under List, a created todo', () => {
    it('empties every connection page it fits, and not the done ones, under listArguments mode match', async () => {
      build({ mutationPolicy: 'List' });
      await warm([TODOS, ALL, FIRST, DONE]);
      expect(await send('mutation { addTodo(title: "NEW") { id title done } }')).toBe('PASS');
      expect(await statuses([TODOS, ALL, FIRST, DONE])).toEqual(['MISS', 'MISS', 'MISS', 'HIT']);
    });

    it('empties every connection page under listArguments mode any', async () => {
      build({ mutationPolicy: 'List', listArguments: { mode: 'any' } });
      await warm([TODOS, ALL, FIRST, DONE]);
      expect(await send('mutation { addTodo(title: "NEW") { id title done } }')).toBe('PASS');
      expect(await statuses([TODOS, ALL, FIRST, DONE])).toEqual(['MISS', 'MISS', 'MISS', 'MISS']);
    });
  });
});
