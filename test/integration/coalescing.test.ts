import { describe, expect, it, vi } from 'vitest';
import { postGraphQL } from '../support/origin.js';
import { useStack } from '../support/stack.js';
import { sampleValue, scrape } from '../ops/prometheusText.js';

/** Request coalescing: a stampede of identical misses sends one request to the origin. */
describe('request coalescing through the gateway', () => {
  const stack = useStack({
    scopes: { AUTHENTICATED: 'header:authorization' },
    rules: [
      { types: ['Query'], maxAge: 60 },
      { types: { Query: ['me'] }, maxAge: 60, scope: 'AUTHENTICATED' },
    ],
  });
  const coalescedCount = async (): Promise<number> =>
    sampleValue(await scrape(stack().sidecar.adminPort), 'svc_cache_coalesced_requests_total') ?? Number.NaN;

  it('answers 50 concurrent identical misses with one origin request, and counts the ones that waited', async () => {
    const before = await coalescedCount();
    stack().origin.setBehaviour({ delayMs: 200 });
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => postGraphQL(stack().url, { query: '{ todos { id title } }' })),
    );
    expect(stack().origin.requestCount()).toBe(1);
    expect(new Set(responses.map((r) => r.status))).toEqual(new Set([200]));
    expect(new Set(responses.map((r) => r.text)).size).toBe(1);
    const statuses = responses.map((r) => r.headers['svc-cache']);
    expect(statuses.filter((s) => s === 'MISS')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'HIT')).toHaveLength(49);
    // Every HIT that waited for the leader is counted; one that arrived after the leader stored
    // the entry is a plain HIT.
    const coalesced = (await coalescedCount()) - before;
    expect(coalesced).toBeGreaterThanOrEqual(1);
    expect(coalesced).toBeLessThanOrEqual(49);
  });

  it('lets waiting requests fetch for themselves when the leader gets nothing cacheable, not counted as coalesced', async () => {
    const before = await coalescedCount();
    stack().origin.setBehaviour({ delayMs: 100, forcedResponse: { status: 500, body: 'upstream broke' } });
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => postGraphQL(stack().url, { query: '{ users { id } }' })),
    );
    expect(responses.map((r) => [r.status, r.text, r.headers['svc-cache']])).toEqual(
      Array.from({ length: 10 }, () => [500, 'upstream broke', 'PASS']),
    );
    expect(stack().origin.requestCount()).toBe(10);
    expect(await coalescedCount()).toBe(before);
  });

  it('does not hold up identical misses behind a request that asked for no-store, which stores nothing', async () => {
    stack().origin.setBehaviour({ delayMs: 200 });
    const query = { query: '{ todos { id done } }' };
    const noStore = postGraphQL(stack().url, query, { 'cache-control': 'no-store' });
    await vi.waitFor(() => expect(stack().origin.requestCount()).toBe(1));
    const others = await Promise.all(Array.from({ length: 20 }, () => postGraphQL(stack().url, query)));
    expect((await noStore).headers['svc-cache']).toBe('PASS');
    const statuses = others.map((r) => r.headers['svc-cache']);
    expect([statuses.filter((s) => s === 'MISS').length, statuses.filter((s) => s === 'HIT').length]).toEqual([1, 19]);
    expect(stack().origin.requestCount()).toBe(2);
  });

  it('never coalesces across scope buckets', async () => {
    stack().origin.setBehaviour({ delayMs: 150 });
    const query = { query: '{ me { id name } }' };
    const [alice, bob] = await Promise.all([
      postGraphQL(stack().url, query, { authorization: 'Bearer alice' }),
      postGraphQL(stack().url, query, { authorization: 'Bearer bob' }),
    ]);
    expect(alice.json?.data).toEqual({ me: { id: 'u1', name: expect.any(String) } });
    expect(bob.json?.data).toEqual({ me: { id: 'u2', name: expect.any(String) } });
    expect(stack().origin.requestCount()).toBe(2);
  });
});
