import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { postGraphQL } from '../support/origin.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * swr: once an entry is past maxAge but within maxAge + swr, the first request refreshes it from the
 * origin (MISS) while requests arriving meanwhile get the stale answer at once (HIT, age past
 * max-age); after swr it is gone.
 */
describe('stale-while-revalidate', () => {
  let stack: Stack;
  const TIME = { query: '{ time }' };

  beforeAll(async () => {
    stack = await startStack({ rules: [{ types: ['Query'], maxAge: 1, swr: 30 }], cache: { coalesceWaitMs: 5000 } });
  });
  afterAll(async () => {
    await stack.close();
  });

  it('serves the stale answer while one request refreshes it', async () => {
    const first = await postGraphQL(stack.url, TIME);
    expect(first.headers['svc-cache']).toBe('MISS');
    await new Promise((resolve) => setTimeout(resolve, 1100));

    stack.origin.setBehaviour({ delayMs: 400 });
    const originRequestsBefore = stack.origin.requestCount();
    const refreshing = postGraphQL(stack.url, TIME);
    // Only once the refresh has reached the origin is another request "meanwhile".
    await vi.waitFor(() => expect(stack.origin.requestCount()).toBe(originRequestsBefore + 1), { timeout: 5000, interval: 5 });
    const meanwhile = await postGraphQL(stack.url, TIME);
    const refreshed = await refreshing;
    stack.origin.setBehaviour({ delayMs: 0 });

    expect([meanwhile.headers['svc-cache'], meanwhile.text]).toEqual(['HIT', first.text]);
    expect(Number(meanwhile.headers['age'])).toBeGreaterThanOrEqual(1);
    expect(refreshed.headers['svc-cache']).toBe('MISS');
    expect(refreshed.text).not.toBe(first.text);
    const after = await postGraphQL(stack.url, TIME);
    expect([after.headers['svc-cache'], after.text]).toEqual(['HIT', refreshed.text]);
  });
});
