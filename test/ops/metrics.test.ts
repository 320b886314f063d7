import { createHash } from 'node:crypto';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { configSchema, loadConfig } from '../../src/config/index.js';
import { startRedisServer } from '../support/redis.js';
import { silentLogger } from '../../src/observability/log.js';
import { MeasuredStore } from '../../src/sidecar/measuredStore.js';
import { Metrics } from '../../src/observability/metrics.js';
import { startSidecar, type Sidecar } from '../../src/sidecar/sidecar.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { Lookup } from '../../src/store/index.js';
import type { RequestSummary } from '../../src/engine/engine.js';
import { demoSchemaSDL, startDemoOrigin } from '../support/origin.js';
import { startStack, type Stack, useStack } from '../support/stack.js';
import { eventually, metricTypes, sampleValue, scrape } from './prometheusText.js';

/** `/metrics` moving with real traffic: client -> development gateway -> sidecar -> demo origin. */

const TODOS_QUERY = '{ todos { id title } }';
const PURGE_TOKEN = 'metrics-test-purge-token';

async function postGraphQL(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

describe('metrics with real traffic', () => {
  const stack = useStack({ purge: { tokens: [PURGE_TOKEN] } }, { freshEachTest: false });

  it('counts MISS, HIT and PASS, the bytes served from cache and the time spent per message', async () => {
    const miss = await postGraphQL(stack().url, { query: TODOS_QUERY });
    expect(miss.headers.get('svc-cache')).toBe('MISS');
    await miss.arrayBuffer();
    const hit = await postGraphQL(stack().url, { query: TODOS_QUERY });
    expect(hit.headers.get('svc-cache')).toBe('HIT');
    const hitBytes = (await hit.arrayBuffer()).byteLength;
    const mutation = await postGraphQL(stack().url, { query: 'mutation { addTodo(title: "metrics") { id } }' });
    expect(mutation.headers.get('svc-cache')).toBe('PASS');
    await mutation.arrayBuffer();

    const exposition = await eventually(async () => {
      const text = await scrape(stack().sidecar.adminPort);
      expect(sampleValue(text, 'svc_cache_streams_active')).toBe(0);
      return text;
    });
    expect(sampleValue(exposition, 'svc_cache_requests_total', { outcome: 'MISS' })).toBe(1);
    expect(sampleValue(exposition, 'svc_cache_requests_total', { outcome: 'HIT' })).toBe(1);
    expect(sampleValue(exposition, 'svc_cache_requests_total', { outcome: 'PASS' })).toBe(1);
    expect(sampleValue(exposition, 'svc_cache_requests_total', { outcome: 'ERROR' })).toBe(0);
    expect(sampleValue(exposition, 'svc_cache_pass_total', { reason: 'mutation' })).toBe(1);
    expect(hitBytes).toBeGreaterThan(0);
    expect(sampleValue(exposition, 'svc_cache_bytes_served_from_cache_total')).toBe(hitBytes);
    expect(sampleValue(exposition, 'svc_cache_decision_duration_seconds_count', { phase: 'request_headers' })).toBe(3);
    expect(sampleValue(exposition, 'svc_cache_decision_duration_seconds_count', { phase: 'request_body' })).toBe(3);
    expect(sampleValue(exposition, 'svc_cache_decision_duration_seconds_count', { phase: 'response_body' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(exposition, 'svc_cache_store_duration_seconds_count', { operation: 'lookup' })).toBeGreaterThanOrEqual(2);
    expect(sampleValue(exposition, 'svc_cache_store_duration_seconds_count', { operation: 'store' })).toBeGreaterThanOrEqual(1);
  });

  // An outside audit: issue 14 asked for svc-cache's own error codes as a label.
  it('counts errors svc-cache answers itself as ERROR, and by their code', async () => {
    const scraped = await scrape(stack().sidecar.adminPort);
    const before = sampleValue(scraped, 'svc_cache_requests_total', { outcome: 'ERROR' })!;
    const byCode = sampleValue(scraped, 'svc_cache_errors_total', { code: 'METHOD_NOT_ALLOWED' }) ?? 0;
    const path = `${stack().url}?query=${encodeURIComponent('mutation { addTodo(title: "by GET") { id } }')}`;
    const refused = await fetch(path);
    expect(refused.status).toBe(405);
    await refused.arrayBuffer();
    await eventually(async () => {
      const text = await scrape(stack().sidecar.adminPort);
      expect(sampleValue(text, 'svc_cache_requests_total', { outcome: 'ERROR' })).toBe(before + 1);
      expect(sampleValue(text, 'svc_cache_errors_total', { code: 'METHOD_NOT_ALLOWED' })).toBe(byCode + 1);
    });
  });

  it('counts persisted-query registrations and PersistedQueryNotFound answers', async () => {
    const query = '{ users { id name } }';
    const persistedQuery = { version: 1, sha256Hash: createHash('sha256').update(query).digest('hex') };
    const unknown = await postGraphQL(stack().url, { extensions: { persistedQuery } });
    expect(await unknown.json()).toMatchObject({ errors: [{ extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }] });
    const registering = await postGraphQL(stack().url, { query, extensions: { persistedQuery } });
    expect(registering.status).toBe(200);
    await registering.arrayBuffer();
    const text = await scrape(stack().sidecar.adminPort);
    expect(sampleValue(text, 'svc_cache_persisted_queries_total', { event: 'not-found' })).toBe(1);
    expect(sampleValue(text, 'svc_cache_persisted_queries_total', { event: 'registered' })).toBe(1);
  });

  it('counts purges by result with the entries removed, and invalidations after mutations by what they were worked out from', async () => {
    const before = await scrape(stack().sidecar.adminPort);
    const query = '{ todo(id: "2") { id title } }';
    await (await postGraphQL(stack().url, { query })).arrayBuffer();
    const mutation = await postGraphQL(stack().url, { query: 'mutation { updateTodo(id: "2", done: false) { id done } }' });
    expect(mutation.status).toBe(200);
    await mutation.arrayBuffer();
    // Some origins run the document an id names instead of the text beside it: svc-cache cannot
    // tell what ran, and empties the store once the answer shows something did.
    const unseen = await postGraphQL(stack().url, { query: 'mutation { updateTodo(id: "2", done: false) { id } }', documentId: 'stored' });
    expect([unseen.status, unseen.headers.get('svc-cache')]).toEqual([200, 'PASS']);
    await unseen.arrayBuffer();
    await (await postGraphQL(stack().url, { query: TODOS_QUERY })).arrayBuffer();
    const refused = await postGraphQL(stack().url, { query: 'mutation { _purgeTodo }' }, { 'svc-purge-token': 'wrong' });
    expect(refused.status).toBe(401);
    await refused.arrayBuffer();
    const purged = await postGraphQL(stack().url, { query: 'mutation { _purgeTodo }' }, { 'svc-purge-token': PURGE_TOKEN });
    expect(await purged.json()).toEqual({ data: { _purgeTodo: true } });
    await (await postGraphQL(stack().url, { query: TODOS_QUERY })).arrayBuffer();
    const softly = await postGraphQL(stack().url, { query: 'mutation { _purgeTodo(soft: true) }' }, { 'svc-purge-token': PURGE_TOKEN });
    expect(await softly.json()).toEqual({ data: { _purgeTodo: true } });

    const after = await scrape(stack().sidecar.adminPort);
    const increase = (name: string, labels: Record<string, string> = {}): number =>
      (sampleValue(after, name, labels) ?? 0) - (sampleValue(before, name, labels) ?? 0);
    expect(increase('svc_cache_invalidations_total', { policy: 'Entity', from: 'answer', result: 'ok' })).toBe(1);
    expect(increase('svc_cache_invalidations_total', { policy: 'Entity', from: 'unseen-operation', result: 'ok' })).toBe(1);
    expect(increase('svc_cache_invalidated_entries_total', { policy: 'Entity' })).toBeGreaterThanOrEqual(1);
    expect(increase('svc_cache_purges_total', { result: 'unauthorized' })).toBe(1);
    expect(increase('svc_cache_purges_total', { result: 'purged' })).toBe(2);
    expect(increase('svc_cache_purged_entries_total', { mode: 'hard' })).toBeGreaterThanOrEqual(1);
    expect(increase('svc_cache_purged_entries_total', { mode: 'soft' })).toBe(1);
  });

  // The new user's run: a series that appears at 1 is nothing to increase() and rate().
  it('reports counters of closed label sets at 0 from the first scrape, and the store up', async () => {
    const text = await new Metrics({ processMetrics: false }).exposition();
    const closedSets: Array<[name: string, label: string, values: readonly string[]]> = [
      ['svc_cache_store_errors_total', 'operation', ['lookup', 'store', 'invalidate', 'invalidateAll', 'markStale', 'markAllStale', 'ping']],
      ['svc_cache_purges_total', 'result', ['purged', 'store-failed', 'not-confirmed', 'unauthorized', 'invalid']],
      ['svc_cache_config_reloads_total', 'result', ['ok', 'refused']],
      ['svc_cache_stream_errors_total', 'code', ['INVALID_ARGUMENT', 'INTERNAL']],
      ['svc_cache_stale_if_error_total', 'failure', ['origin-status', 'origin-not-graphql']],
      ['svc_cache_persisted_queries_total', 'event', ['registered', 'not-found', 'not-supported', 'bad-version', 'bad-hash', 'hash-mismatch', 'bad-shape']],
    ];
    const samples = (read: (name: string, label: string, value: string) => number | undefined) =>
      closedSets.flatMap(([name, label, values]) => values.map((value) => [name, value, read(name, label, value)]));
    expect(samples((name, label, value) => sampleValue(text, name, { [label]: value }))).toEqual(samples(() => 0));
    // The review: a failed invalidation (stale answers served) is the series most worth an alert.
    for (const policy of ['Entity', 'List', 'Type']) {
      expect(sampleValue(text, 'svc_cache_invalidations_total', { policy, from: 'answer', result: 'failed' })).toBe(0);
    }
    expect(sampleValue(await scrape(stack().sidecar.adminPort), 'svc_cache_store_up')).toBe(1);
  });

  it('declares every svc-cache metric with its type, and the process metrics', async () => {
    const types = metricTypes(await scrape(stack().sidecar.adminPort));
    expect(Object.fromEntries([...types].filter(([name]) => name.startsWith('svc_cache_')))).toEqual({
      svc_cache_requests_total: 'counter',
      svc_cache_pass_total: 'counter',
      svc_cache_errors_total: 'counter',
      svc_cache_decision_duration_seconds: 'histogram',
      svc_cache_bytes_served_from_cache_total: 'counter',
      svc_cache_streams_active: 'gauge',
      svc_cache_stream_errors_total: 'counter',
      svc_cache_streams_abandoned_total: 'counter',
      svc_cache_store_errors_total: 'counter',
      svc_cache_store_duration_seconds: 'histogram',
      svc_cache_purges_total: 'counter',
      svc_cache_purged_entries_total: 'counter',
      svc_cache_invalidations_total: 'counter',
      svc_cache_invalidated_entries_total: 'counter',
      svc_cache_persisted_queries_total: 'counter',
      svc_cache_coalesced_requests_total: 'counter',
      svc_cache_stale_if_error_total: 'counter',
      svc_cache_local_cache_total: 'counter',
      svc_cache_local_cache_enabled: 'gauge',
      svc_cache_purge_ack_seconds: 'histogram',
      svc_cache_config_reloads_total: 'counter',
      svc_cache_store_up: 'gauge',
      svc_cache_config_last_reload_successful: 'gauge',
      svc_cache_config_schema_mismatches: 'gauge',
    });
    expect(types.get('process_cpu_seconds_total')).toBe('counter');
    expect(types.get('nodejs_heap_size_used_bytes')).toBe('gauge');
  });
});

describe('a request Envoy answers itself after its request phase', () => {
  it('is a PASS for no-response-phase: Envoy 1.36 skips ext_proc for the router 503 of an origin that is down', async () => {
    const origin = await startDemoOrigin({ port: 0 });
    const summaries: RequestSummary[] = [];
    const stack = await startStack({}, { origin, onRequestCompleted: (summary) => summaries.push(summary) });
    try {
      await origin.close();
      const refused = await postGraphQL(stack.url, { query: TODOS_QUERY });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('svc-cache')).toBeNull();
      await refused.arrayBuffer();
      const exposition = await eventually(async () => {
        const text = await scrape(stack.sidecar.adminPort);
        expect(sampleValue(text, 'svc_cache_streams_active')).toBe(0);
        return text;
      });
      expect(sampleValue(exposition, 'svc_cache_requests_total', { outcome: 'PASS' })).toBe(1);
      expect(sampleValue(exposition, 'svc_cache_pass_total', { reason: 'no-response-phase' })).toBe(1);
      expect(summaries).toEqual([expect.objectContaining({ outcome: 'PASS', passReason: 'no-response-phase', operationName: '' })]);
    } finally {
      await stack.close();
    }
  });
});

describe('store errors', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it('are counted by operation while requests still pass to the origin, and the store is down from the first ping', async () => {
    stack = await startStack({ redis: { url: 'redis://127.0.0.1:1', commandTimeoutMs: 100 } });
    // The new user's run: nothing on /metrics said Redis was down until a request or probe came.
    const sidecar = stack.sidecar;
    await vi.waitFor(async () => expect(sampleValue(await scrape(sidecar.adminPort), 'svc_cache_store_up')).toBe(0), { timeout: 5_000, interval: 50 });
    const response = await postGraphQL(stack.url, { query: TODOS_QUERY });
    expect(response.status).toBe(200);
    expect(response.headers.get('svc-cache')).toBe('PASS');
    await response.arrayBuffer();
    const text = await scrape(stack.sidecar.adminPort);
    expect(sampleValue(text, 'svc_cache_store_errors_total', { operation: 'lookup' })).toBeGreaterThanOrEqual(1);
  });
});

// The new-user audit: a misspelt type in a scoped rule was one log line, and nothing to alert on.
describe('svc_cache_config_schema_mismatches', () => {
  it('counts the names of the configuration the origin schema lacks, once it is loaded', async () => {
    const stack = await startStack({
      scopes: { USER: 'header:x-user-id' },
      rules: [
        { types: ['Query'], maxAge: 60 },
        { types: { Todoo: [], Todo: ['titel'] }, maxAge: 60, scope: 'USER' },
      ],
    });
    try {
      await stack.sidecar.schemaReady;
      expect(sampleValue(await scrape(stack.sidecar.adminPort), 'svc_cache_config_schema_mismatches')).toBe(2);
    } finally {
      await stack.close();
    }
  });
});

// The review: the start-up ping alone passed the test above; the store must be watched after it.
describe('svc_cache_store_up', () => {
  it('follows a Redis that goes away and comes back, with no request and no probe', async () => {
    const redis = await startRedisServer();
    const origin = await startDemoOrigin({ port: 0 });
    const config = configSchema.parse({ origin: { url: origin.url }, redis: { url: redis.url, commandTimeoutMs: 200 }, rules: [] });
    const sidecar = await startSidecar({ config, grpcPort: 0, adminPort: 0, host: '127.0.0.1', logger: silentLogger(), storePingIntervalMs: 100 });
    try {
      const up = async () => sampleValue(await scrape(sidecar.adminPort), 'svc_cache_store_up');
      await vi.waitFor(async () => expect(await up()).toBe(1), { timeout: 5_000, interval: 50 });
      await redis.kill();
      await vi.waitFor(async () => expect(await up()).toBe(0), { timeout: 5_000, interval: 50 });
      await redis.restart();
      await vi.waitFor(async () => expect(await up()).toBe(1), { timeout: 10_000, interval: 50 });
    } finally {
      await sidecar.close(0);
      await origin.close();
      await redis.stop();
    }
  });
});

describe('the measured store', () => {
  const measured = (lookup: () => Lookup | Promise<Lookup>) => {
    const metrics = new Metrics({ processMetrics: false });
    return { metrics, store: new MeasuredStore(Object.assign(new MemoryStore({ maxBytes: 1024 }), { lookup }), metrics) };
  };

  it('leaves results and rejections of the wrapped store unchanged', async () => {
    const metrics = new Metrics({ processMetrics: false });
    const failure = new Error('store down');
    const failing = Object.assign(new MemoryStore({ maxBytes: 1024 }), { ping: () => Promise.reject(failure) });
    const store = new MeasuredStore(failing, metrics);
    await expect(store.ping()).rejects.toBe(failure);
    expect((await store.lookup('key')).entry).toBeUndefined();
    const text = await metrics.exposition();
    expect(sampleValue(text, 'svc_cache_store_errors_total', { operation: 'ping' })).toBe(1);
    expect(sampleValue(text, 'svc_cache_store_errors_total', { operation: 'lookup' })).toBe(0);
    expect(sampleValue(text, 'svc_cache_store_up')).toBe(0);
    expect(sampleValue(text, 'svc_cache_store_duration_seconds_count', { operation: 'lookup' })).toBe(1);
  });

  it("passes a reconnection's listener to the wrapped store, which calls it", () => {
    const inner = new MemoryStore({ maxBytes: 1024 });
    const forwarded = vi.spyOn(inner, 'onReconnect');
    const listener = (): void => {};
    new MeasuredStore(inner, new Metrics({ processMetrics: false })).onReconnect(listener);
    expect(forwarded).toHaveBeenCalledWith(listener);
  });

  it('hands back a replica-local answer at once, counted and not timed', async () => {
    const local: Lookup = { entry: undefined, mark: { value: 'mark' }, localCache: 'hit' };
    const { metrics, store } = measured(() => local);
    expect(store.lookup('key')).toBe(local);
    const text = await metrics.exposition();
    expect(sampleValue(text, 'svc_cache_local_cache_total', { result: 'hit' })).toBe(1);
    expect(sampleValue(text, 'svc_cache_store_duration_seconds_count', { operation: 'lookup' })).toBeUndefined();
  });

  it('times a lookup the local cache sent on to Redis, and counts it as a local miss', async () => {
    const read: Lookup = { entry: undefined, mark: { value: 'mark' }, localCache: 'miss' };
    const { metrics, store } = measured(() => Promise.resolve(read));
    expect(await store.lookup('key')).toBe(read);
    const text = await metrics.exposition();
    expect(sampleValue(text, 'svc_cache_local_cache_total', { result: 'miss' })).toBe(1);
    expect(sampleValue(text, 'svc_cache_store_duration_seconds_count', { operation: 'lookup' })).toBe(1);
  });

  it('counts and times a lookup that throws as one that rejects', async () => {
    const failure = new Error('cannot locate');
    const { metrics, store } = measured(() => {
      throw failure;
    });
    expect(() => store.lookup('key')).toThrow(failure);
    const text = await metrics.exposition();
    expect(sampleValue(text, 'svc_cache_store_errors_total', { operation: 'lookup' })).toBe(1);
    expect(sampleValue(text, 'svc_cache_store_duration_seconds_count', { operation: 'lookup' })).toBe(1);
  });
});

describe('config reloads', () => {
  let directory: string;
  let sidecar: Sidecar;
  const configPath = (): string => join(directory, 'config.yaml');
  const writeConfig = async (text: string): Promise<void> => {
    const staged = `${configPath()}.next`;
    await writeFile(staged, text);
    await rename(staged, configPath());
  };
  const validConfig = (maxAge: number): string => `
origin: { url: "http://127.0.0.1:9/graphql" }
schema: { file: "${join(directory, 'schema.graphql')}" }
rules: [{ types: [Query], maxAge: ${maxAge} }]
`;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'svc-cache-ops-'));
    await writeFile(join(directory, 'schema.graphql'), demoSchemaSDL);
    await writeConfig(validConfig(60));
    sidecar = await startSidecar({
      config: await loadConfig(configPath()),
      configPath: configPath(),
      grpcPort: 0,
      adminPort: 0,
      host: '127.0.0.1',
      logger: silentLogger(),
    });
    await sidecar.schemaReady;
  });
  afterAll(async () => {
    await sidecar.close(1000);
    await rm(directory, { recursive: true, force: true });
  });

  it('are counted as ok or refused, and the last result is a gauge to alert on', async () => {
    await writeConfig(validConfig(120));
    await eventually(async () => {
      const text = await scrape(sidecar.adminPort);
      expect(sampleValue(text, 'svc_cache_config_reloads_total', { result: 'ok' })).toBe(1);
      expect(sampleValue(text, 'svc_cache_config_last_reload_successful')).toBe(1);
    });
    await writeConfig('origin: { url: 42 }\n');
    await eventually(async () => {
      const text = await scrape(sidecar.adminPort);
      expect(sampleValue(text, 'svc_cache_config_reloads_total', { result: 'refused' })).toBe(1);
      expect(sampleValue(text, 'svc_cache_config_last_reload_successful')).toBe(0);
    });
  });
});
