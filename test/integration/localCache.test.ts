import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { GraphQLRequestParams } from '../support/origin.js';
import { postGraphQLRaw } from '../support/rawHttp.js';
import { startReplicasSharingRedis, type Replicas } from '../support/replicas.js';
import type { ConfigInput, Stack } from '../support/stack.js';
import { sampleValue, scrape } from '../ops/prometheusText.js';

/**
 * The Redis store's replica-local cache through the whole path (README, Redis: the replica-local
 * cache): two sidecars on one Redis, a HIT repeated on replica B answered without Redis, and every
 * purge or mutation through replica A felt on B's very next request.
 */

const TOKEN = 'test-purge-token-local-0123456789';
const CONFIG: ConfigInput = {
  purge: { tokens: [TOKEN] },
  rules: [{ types: ['Query'], maxAge: 60, swr: 30 }],
  cache: { coalesceWaitMs: 0 },
};
const TODO = { query: '{ todo(id: "1") { title } }' };

/** Replicas serve one site: their requests name the same host, whichever replica's port they reach. */
async function cacheStatus(stack: Stack, params: GraphQLRequestParams, headers: Record<string, string> = {}): Promise<string | undefined> {
  return (await postGraphQLRaw(stack.url, params, [['host', 'app.test'], ...Object.entries(headers)])).headers['svc-cache'];
}

async function purge(stack: Stack, mutation: string): Promise<string> {
  return (await postGraphQLRaw(stack.url, { query: mutation }, [['host', 'app.test'], ['svc-purge-token', TOKEN]])).text;
}

async function metric(stack: Stack, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  return sampleValue(await scrape(stack.sidecar.adminPort), name, labels);
}

describe('replica-local cache, two sidecars on one Redis', () => {
  let replicas: Replicas;
  let replicaA: Stack;
  let replicaB: Stack;

  beforeAll(async () => {
    replicas = await startReplicasSharingRedis(CONFIG);
    ({ replicaA, replicaB } = replicas);
    for (const replica of [replicaA, replicaB]) {
      await vi.waitFor(async () => expect(await metric(replica, 'svc_cache_local_cache_enabled')).toBe(1), { timeout: 10_000, interval: 50 });
    }
  });
  afterAll(async () => {
    await replicas.close();
  });

  /** B reads the entry A stored from Redis once, then answers it from its local cache. */
  async function heldLocallyByB(): Promise<void> {
    const hitsBefore = (await metric(replicaB, 'svc_cache_local_cache_total', { result: 'hit' }))!;
    const timedBefore = (await metric(replicaB, 'svc_cache_store_duration_seconds_count', { operation: 'lookup' })) ?? 0;
    expect(await cacheStatus(replicaB, TODO)).toBe('HIT');
    expect(await cacheStatus(replicaB, TODO)).toBe('HIT');
    expect(await metric(replicaB, 'svc_cache_local_cache_total', { result: 'hit' })).toBe(hitsBefore + 1);
    // Only the read from Redis is a timed store operation; the local HIT is counted above.
    expect(await metric(replicaB, 'svc_cache_store_duration_seconds_count', { operation: 'lookup' })).toBe(timedBefore + 1);
  }

  it('answers a repeated HIT on B locally, and B misses right after a purge through A', async () => {
    expect(await cacheStatus(replicaA, TODO)).toBe('MISS');
    await heldLocallyByB();
    expect(await purge(replicaA, 'mutation { purgeTodo(id: "1") }')).toBe('{"data":{"purgeTodo":true}}');
    expect(await cacheStatus(replicaB, TODO)).toBe('MISS');
    expect(await metric(replicaA, 'svc_cache_purge_ack_seconds_count')).toBeGreaterThanOrEqual(1);
  });

  it('misses on B right after a mutation through A, with the new answer', async () => {
    await cacheStatus(replicaA, TODO);
    await heldLocallyByB();
    const mutation = await postGraphQLRaw(replicaA.url, { query: 'mutation { updateTodo(id: "1", title: "Renamed on A") { title } }' }, [
      ['host', 'app.test'],
    ]);
    expect(mutation.headers['svc-cache']).toBe('PASS');
    const next = await postGraphQLRaw(replicaB.url, TODO, [['host', 'app.test']]);
    expect([next.headers['svc-cache'], next.text]).toEqual(['MISS', '{"data":{"todo":{"title":"Renamed on A"}}}']);
  });

  it.each([
    { purge: 'a soft purge', mutation: 'mutation { purgeTodo(id: "1", soft: true) }', field: 'purgeTodo' },
    { purge: '_purgeAll', mutation: 'mutation { _purgeAll }', field: '_purgeAll' },
  ])('does not answer B locally right after $purge through A', async ({ mutation, field }) => {
    await cacheStatus(replicaA, TODO);
    await heldLocallyByB();
    expect(await purge(replicaA, mutation)).toBe(`{"data":{"${field}":true}}`);
    // Soft: within swr, the first request on B refreshes the entry from the origin; hard: it is gone.
    expect(await cacheStatus(replicaB, TODO)).toBe('MISS');
  });
});
