import { describe, expect, it } from 'vitest';
import { postGraphQL } from '../support/origin.js';
import { useStack } from '../support/stack.js';

/**
 * An origin answer that leaves no room under Envoy's 100 headers for svc-cache's own would be
 * Envoy's empty 500 (docs/ext-proc.md, Header mutations): svc-cache leaves its informational
 * headers out instead and caches as usual (README, Bad input).
 */
describe('an origin answer at Envoy header limit', () => {
  const TOKEN = 'header-room-purge-token-0123456789';
  const stack = useStack({ rules: [{ types: ['Query'], maxAge: 60 }], purge: { tokens: [TOKEN] } });

  /** The origin's own headers plus `n` more: with `:status`, content-type, content-length, date, connection and keep-alive. */
  function originAdds(n: number): void {
    stack().origin.setBehaviour({ headers: Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-origin-${i}`, 'v'])) });
  }

  it('keeps svc-cache on an answer with room for it: 99 headers, 100 with it', async () => {
    originAdds(93);
    const miss = await postGraphQL(stack().url, { query: '{ todos { id } }' });
    const pass = await postGraphQL(stack().url, { query: 'mutation { addTodo(title: "a") { id } }' });
    expect([miss.status, miss.headers['svc-cache'], pass.status, pass.headers['svc-cache']]).toEqual([200, 'MISS', 200, 'PASS']);
  });

  it('answers the origin answer without svc-cache when 100 headers leave no room, and still caches it', async () => {
    originAdds(94);
    const miss = await postGraphQL(stack().url, { query: '{ todos { id } }' });
    expect([miss.status, miss.headers['svc-cache'], miss.headers['x-origin-93'], miss.text]).toEqual([
      200,
      undefined,
      'v',
      '{"data":{"todos":[{"id":"1"},{"id":"2"},{"id":"3"}]}}',
    ]);
    const hit = await postGraphQL(stack().url, { query: '{ todos { id } }' });
    expect([hit.status, hit.headers['svc-cache'], hit.text]).toEqual([200, 'HIT', miss.text]);

    const pass = await postGraphQL(stack().url, { query: 'mutation { addTodo(title: "a") { id } }' });
    expect([pass.status, pass.headers['svc-cache'], pass.json?.data]).toEqual([200, undefined, { addTodo: { id: '4' } }]);
    expect(stack().origin.requestCount()).toBe(2);
  });

  it('does not store an answer whose HIT would cross the limit: Envoy would send it with none of its headers', async () => {
    // 95 of its own beside content-type: a compressed HIT adds content-encoding, vary, svc-cache and age.
    originAdds(95);
    const query = '{ todos { id title done author { id name } } }';
    const first = await postGraphQL(stack().url, { query }, { 'accept-encoding': 'gzip' });
    const second = await postGraphQL(stack().url, { query }, { 'accept-encoding': 'gzip' });
    expect(first.text.length).toBeGreaterThan(256);
    expect([second.status, second.headers['x-origin-94'], second.headers['content-type'], second.text]).toEqual([200, 'v', first.headers['content-type'], first.text]);
    expect(stack().origin.requestCount()).toBe(2);
  });

  it("leaves a svc-debug HIT's explanation out where it would cross the limit, keeping the HIT's own headers", async () => {
    // 94 of its own: a plain HIT of this small answer (stored as sent) has 99 headers with :status.
    originAdds(94);
    const query = '{ todos { id } }';
    await postGraphQL(stack().url, { query });
    const hit = await postGraphQL(stack().url, { query }, { 'svc-debug': '1', 'svc-purge-token': TOKEN });
    expect([hit.status, hit.headers['svc-cache'], hit.headers['content-type'], hit.headers['x-origin-93']]).toEqual([200, 'HIT', 'application/json; charset=utf-8', 'v']);
    expect(Object.keys(hit.headers).filter((name) => name.startsWith('svc-debug'))).toEqual([]);
  });
});

/**
 * A request whose headers Envoy's codec let through (under 100) but that Envoy's own additions
 * (`x-forwarded-*`, `x-request-id`) take past its limits: any header mutation svc-cache sends it is
 * answered 500 (docs/ext-proc.md, Header mutations). The ext_proc audit saw a MISS of 95 header
 * lines answered 500 with an empty body.
 */
describe('a request at Envoy header limit', () => {
  const TOKEN = 'header-room-purge-token-0123456789';
  const stack = useStack({ rules: [{ types: ['Query'], maxAge: 60 }], purge: { tokens: [TOKEN] } });
  const many = Object.fromEntries(Array.from({ length: 95 }, (_, i) => [`x-client-${i}`, 'v']));

  it('passes a query unchanged, and a mutation still invalidates what it changed', async () => {
    const query = '{ todos { id title } }';
    expect((await postGraphQL(stack().url, { query })).headers['svc-cache']).toBe('MISS');
    const crowded = await postGraphQL(stack().url, { query: '{ users { name } }' }, many);
    expect([crowded.status, crowded.headers['svc-cache'], crowded.text]).toEqual([200, 'PASS', '{"data":{"users":[{"name":"Alice"},{"name":"Bob"}]}}']);
    const mutation = await postGraphQL(stack().url, { query: 'mutation { updateTodo(id: "1", title: "Crowded") { id title } }' }, many);
    expect([mutation.status, mutation.json?.data]).toEqual([200, { updateTodo: { id: '1', title: 'Crowded' } }]);
    const after = await postGraphQL(stack().url, { query });
    expect([after.headers['svc-cache'], after.text.includes('Crowded')]).toEqual(['MISS', true]);
  });

  it('answers 431 in place of sending the purge token on, when there is no room to remove it', async () => {
    const answer = await postGraphQL(stack().url, { query: '{ todos { id } }' }, { ...many, 'svc-purge-token': TOKEN });
    expect([answer.status, answer.json]).toEqual([431, { errors: [{ message: 'The request headers are too large', extensions: { code: 'REQUEST_HEADERS_TOO_LARGE' } }] }]);
    expect(stack().origin.requestCount()).toBe(0);
  });
});
