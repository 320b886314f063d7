import { buildSchema } from 'graphql';
import { describe, expect, it, vi } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { DecisionEngine } from '../../src/engine/engine.js';
import { invalidationTag as tag } from '../../src/invalidation/tags.js';
import { MemoryStore } from '../../src/store/memory.js';
import { unitEngineDependencies } from '../support/engineDependencies.js';

/**
 * Mutations that name many objects (a bulk import, a batch of a hundred) invalidate by type past
 * MAX_INVALIDATED_ENTITIES objects for the whole request: each tag invalidated costs the store a
 * record per shard (the work-per-request audit filled a 256 MB Redis from one 4.7 KB batch).
 */

const schema = buildSchema('type Todo { id: ID! title: String } type Query { todos: [Todo!]! } type Mutation { importTodos(n: Int!): [Todo!]! }');
const IMPORT = 'mutation { importTodos(n: 1) { id } }';
const todos = (from: number, count: number) => Array.from({ length: count }, (_, index) => ({ id: String(from + index) }));

describe('invalidation after mutations that name many objects', () => {
  const setUp = () => {
    const config = configSchema.parse({ origin: { url: 'http://origin.test/graphql' }, rules: [{ types: ['Query'], maxAge: 60 }] });
    const store = new MemoryStore({ maxBytes: 1024 * 1024 });
    const engine = new DecisionEngine(unitEngineDependencies(() => ({ config, schema }), store, () => 1_700_000_000_000));
    return { engine, invalidate: vi.spyOn(store, 'invalidate') };
  };

  async function answer(engine: DecisionEngine, body: unknown, data: unknown): Promise<void> {
    const exchange = engine.begin({ method: 'POST', path: '/graphql', headers: [[':method', 'POST'], [':path', '/graphql'], ['content-type', 'application/json']], hasBody: true });
    const decision = await engine.requestBody(exchange, Buffer.from(JSON.stringify(body)));
    expect(decision.kind).toBe('forward');
    await engine.responseHead(exchange, 200, [[':status', '200'], ['content-type', 'application/json']], false);
    await engine.responseBody(exchange, Buffer.from(JSON.stringify(data)));
  }

  it('names each object of an answer up to 1,000 of them, and their type past that', async () => {
    const { engine, invalidate } = setUp();
    await answer(engine, { query: IMPORT }, { data: { importTodos: todos(0, 1000) } });
    await answer(engine, { query: IMPORT }, { data: { importTodos: todos(0, 1001) } });
    expect(invalidate.mock.calls.map(([tags]) => tags.length)).toEqual([1001, 1]);
    expect(invalidate.mock.calls[0]![0]).toContain(tag.entity('Todo', '999'));
    expect(invalidate.mock.calls[1]![0]).toEqual([tag.type('Todo')]);
  });

  it('counts the objects of every mutation of a batch against one budget', async () => {
    const { engine, invalidate } = setUp();
    await answer(engine, [{ query: IMPORT }, { query: IMPORT }], [{ data: { importTodos: todos(0, 600) } }, { data: { importTodos: todos(600, 600) } }]);
    const [tags] = invalidate.mock.calls[0]!;
    expect(tags).toContain(tag.entity('Todo', '599'));
    expect(tags).not.toContain(tag.entity('Todo', '600'));
    expect(tags).toContain(tag.type('Todo'));
    expect(tags.length).toBeLessThanOrEqual(1002);
  });
});
