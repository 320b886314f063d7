import { describe, expect, it } from 'vitest';
import { postGraphQL } from '../support/origin.js';
import { useStack } from '../support/stack.js';

/**
 * Envoy resets every ext_proc stream it closes; Node's HTTP/2 guard against rapid resets closes a
 * connection past about a thousand of them, failing every stream on it (Envoy then fails open, and
 * the answer lacks svc-cache). With streams spread over connections as deploy/sidecar/envoy.yaml does, and
 * the sidecar ending finished calls first, thousands of requests in a burst all stay cached.
 */
describe('thousands of ext_proc streams in a burst', () => {
  const stack = useStack({}, { freshEachTest: false });

  it('answers every one from the sidecar', async () => {
    const query = { query: '{ todos { id } }' };
    expect((await postGraphQL(stack().url, query)).headers['svc-cache']).toBe('MISS');
    const total = 2500;
    const concurrency = 25;
    const statuses = new Map<string, number>();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let sent = 0; sent < total / concurrency; sent += 1) {
          const status = (await postGraphQL(stack().url, query)).headers['svc-cache'] ?? 'none (failed open)';
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }
      }),
    );
    expect(Object.fromEntries(statuses)).toEqual({ HIT: total });
  });
});
