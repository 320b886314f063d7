import { describe, expect, it } from 'vitest';
import { postGraphQL } from '../support/origin.js';
import { useStack } from '../support/stack.js';

/**
 * Fragment-doubling documents (`fragment Fi on Query { ...Fi+1 ...Fi+1 }`): a kilobyte of query
 * that a walk following every spread anew would take 2^levels steps over, blocking the event loop
 * that also answers health probes (docs/graphql-caching.md, Limits). Each is answered, and a
 * `/healthz` probe sent at the same moment is answered too. That the analysis is linear is proven
 * by counting its work in test/graphql/fragments.test.ts, not by timing here.
 */

function fragmentBomb(levels: number, body: string): string {
  const fragments = Array.from({ length: levels }, (_, i) => `fragment F${i} on Query { ${body} ...F${i + 1} ...F${i + 1} }`);
  return `{ ...F0 } ${fragments.join(' ')} fragment F${levels} on Query { ${body} }`;
}

describe('fragment-doubling documents through the gateway', () => {
  const stack = useStack({ limits: { maxQueryBytes: 100 * 1024, maxDepth: 5, maxAliases: 10 } }, { freshEachTest: false });

  async function withHealthProbe<T>(send: () => Promise<T>): Promise<T> {
    const [answer, health] = await Promise.all([send(), fetch(`http://127.0.0.1:${stack().sidecar.adminPort}/healthz`)]);
    expect(health.status).toBe(200);
    return answer;
  }

  for (const levels of [24, 40]) {
    it(`answers ${levels} levels of aliased fragments with TOO_MANY_ALIASES, never forwarded`, async () => {
      stack().origin.reset();
      const response = await withHealthProbe(() => postGraphQL(stack().url, { query: fragmentBomb(levels, 'x: todos { id }') }));
      expect(response.status).toBe(400);
      expect(response.json).toEqual({ errors: [{ message: 'Query has more than 10 aliases', extensions: { code: 'TOO_MANY_ALIASES' } }] });
      expect(stack().origin.requestCount()).toBe(0);
    });

    it(`caches ${levels} levels of fragments within the limits as any query`, async () => {
      stack().origin.reset();
      const query = fragmentBomb(levels, 'todos { id }');
      const first = await withHealthProbe(() => postGraphQL(stack().url, { query }));
      expect(first.status).toBe(200);
      expect(first.headers['svc-cache']).toBe('MISS');
      expect((first.json as { data: { todos: unknown[] } }).data.todos.length).toBeGreaterThan(0);
      const second = await withHealthProbe(() => postGraphQL(stack().url, { query }));
      expect(second.headers['svc-cache']).toBe('HIT');
      expect(second.json).toEqual(first.json);
      expect(stack().origin.requestCount()).toBe(1);
    });
  }
});
