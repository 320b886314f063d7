import { afterEach, describe, expect, it, vi } from 'vitest';
import { postGraphQL, type GraphQLHttpResult } from '../support/origin.js';
import { useStack } from '../support/stack.js';

/**
 * swr: once an entry is past maxAge but within maxAge + swr, the first request refreshes it from the
 * origin (MISS) while requests arriving meanwhile get the stale answer at once (HIT, age past
 * max-age); after swr it is gone. The origin's `cache-control` may forbid or shorten that window
 * (README, Request coalescing and stale-while-revalidate).
 */
describe('stale-while-revalidate', () => {
  const TIME = { query: '{ time }' };

  const stack = useStack({ rules: [{ types: ['Query'], maxAge: 1, swr: 30 }], cache: { coalesceWaitMs: 5000 } }, { freshEachTest: false });
  afterEach(async () => {
    stack().origin.setBehaviour({ headers: {}, delayMs: 0 });
    await stack().sidecar.store.invalidateAll();
  });

  /** TIME stored, then past its max-age asked of a slow origin, with one more request sent once the refresh reached it. */
  async function refreshWithOneMeanwhile(): Promise<{ first: GraphQLHttpResult<unknown>; meanwhile: GraphQLHttpResult<unknown>; refreshed: GraphQLHttpResult<unknown> }> {
    const first = await postGraphQL(stack().url, TIME);
    expect(first.headers['svc-cache']).toBe('MISS');
    await new Promise((resolve) => setTimeout(resolve, 1100));

    stack().origin.setBehaviour({ delayMs: 400 });
    const originRequestsBefore = stack().origin.requestCount();
    const refreshing = postGraphQL(stack().url, TIME);
    // Only once the refresh has reached the origin is another request "meanwhile".
    await vi.waitFor(() => expect(stack().origin.requestCount()).toBe(originRequestsBefore + 1), { timeout: 5000, interval: 5 });
    const meanwhile = await postGraphQL(stack().url, TIME);
    const refreshed = await refreshing;
    stack().origin.setBehaviour({ delayMs: 0 });
    expect(stack().origin.requestCount()).toBe(originRequestsBefore + 1);
    return { first, meanwhile, refreshed };
  }

  it('serves the stale answer while one request refreshes it', async () => {
    const { first, meanwhile, refreshed } = await refreshWithOneMeanwhile();

    expect([meanwhile.headers['svc-cache'], meanwhile.text]).toEqual(['HIT', first.text]);
    expect(Number(meanwhile.headers['age'])).toBeGreaterThanOrEqual(1);
    expect(refreshed.headers['svc-cache']).toBe('MISS');
    expect(refreshed.text).not.toBe(first.text);
    const after = await postGraphQL(stack().url, TIME);
    expect([after.headers['svc-cache'], after.text]).toEqual(['HIT', refreshed.text]);
  });

  it.each(['max-age=1, must-revalidate', 'max-age=1, proxy-revalidate', 's-maxage=1', 'max-age=1, stale-while-revalidate=0'])(
    'never serves an answer the origin sent with %s stale: a request meanwhile waits for the refresh',
    async (cacheControl) => {
      stack().origin.setBehaviour({ headers: { 'cache-control': cacheControl } });
      const { first, meanwhile, refreshed } = await refreshWithOneMeanwhile();

      expect([refreshed.headers['svc-cache'], meanwhile.headers['svc-cache'], meanwhile.headers['age']]).toEqual(['MISS', 'HIT', '0']);
      expect(refreshed.text).not.toBe(first.text);
      expect(meanwhile.text).toBe(refreshed.text);
    },
  );
});
