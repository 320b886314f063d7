import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StartedNetwork, StartedTestContainer } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, sampleValue } from '../ops/prometheusText.js';

/**
 * The real thing: Envoy 1.36 (the official image) with deploy/sidecar/envoy.yaml, svc-cache built from
 * the Dockerfile with deploy/compose/config.yaml, Redis and the demo origin (the Dockerfile's demo
 * stage), each in a container as docker-compose.yml arranges them (Envoy and the origin in
 * svc-cache's network namespace, as in the app's pod). Every
 * request goes through Envoy on :8080. Needs a Docker engine; where none answers, it is skipped
 * and says why.
 */

const ROOT = join(import.meta.dirname, '../..');
const IMAGE = 'svc-cache:e2e';
const DEMO_IMAGE = 'svc-cache-demo:e2e';
const ENVOY_IMAGE = 'envoyproxy/envoy:v1.36-latest';
const PURGE_TOKEN = 'e2e-purge-token';
const SCOPE_KEY_SECRET = 'e2e-scope-key-secret-0123456789';

const docker = await dockerEngine();
if (!docker.available) console.warn(`test/e2e/envoy.test.ts skipped: ${docker.reason}`);

describe.skipIf(!docker.available)('through Envoy 1.36 with svc-cache as its ext_proc sidecar', () => {
  let network: StartedNetwork;
  const containers: StartedTestContainer[] = [];
  let redis: StartedTestContainer;
  let sidecar: StartedTestContainer;
  let endpoint: string;
  let adminUrl: string;

  beforeAll(async () => {
    const { GenericContainer, Network, Wait } = await import('testcontainers');
    network = await new Network().start();
    await GenericContainer.fromDockerfile(ROOT).build(IMAGE, { deleteOnExit: false });
    await GenericContainer.fromDockerfile(ROOT).withTarget('demo').build(DEMO_IMAGE, { deleteOnExit: false });
    const start = async (container: InstanceType<typeof GenericContainer>): Promise<StartedTestContainer> => {
      const started = await container.start();
      containers.push(started);
      return started;
    };
    redis = await start(
      new GenericContainer('redis:7-alpine')
        .withNetwork(network)
        .withNetworkAliases('redis')
        .withCommand(['redis-server', '--save', '', '--appendonly', 'no'])
        .withWaitStrategy(Wait.forLogMessage('Ready to accept connections')),
    );
    sidecar = await start(
      new GenericContainer(IMAGE)
        .withNetwork(network)
        .withEnvironment({ SVC_PURGE_TOKEN: PURGE_TOKEN, SVC_SCOPE_KEY_SECRET: SCOPE_KEY_SECRET })
        .withCopyContentToContainer([
          { content: readFileSync(join(ROOT, 'deploy/compose/config.yaml'), 'utf8'), target: '/etc/svc-cache/config.yaml' },
        ])
        .withExposedPorts(8080, 9901)
        .withWaitStrategy(Wait.forLogMessage('svc-cache serving')),
    );
    // The app on 127.0.0.1:4000 of svc-cache's network namespace, where envoy.yaml and the config expect it.
    await start(
      new GenericContainer(DEMO_IMAGE)
        .withNetworkMode(`container:${sidecar.getId()}`)
        .withCommand(['demo-origin', '--port', '4000'])
        .withWaitStrategy(Wait.forLogMessage('demo origin listening')),
    );
    await start(
      new GenericContainer(ENVOY_IMAGE)
        .withNetworkMode(`container:${sidecar.getId()}`)
        .withCopyFilesToContainer([{ source: join(ROOT, 'deploy/sidecar/envoy.yaml'), target: '/etc/envoy/envoy.yaml' }])
        .withCommand(['envoy', '--config-path', '/etc/envoy/envoy.yaml', '--concurrency', '1'])
        .withWaitStrategy(Wait.forLogMessage(/starting main dispatch loop/)),
    );
    endpoint = `http://${sidecar.getHost()}:${sidecar.getMappedPort(8080)}/graphql`;
    adminUrl = `http://${sidecar.getHost()}:${sidecar.getMappedPort(9901)}`;
    // Caching starts once svc-cache has the schema and Envoy's health check has seen it SERVING.
    await eventually(async () => {
      expect((await fetch(`${adminUrl}/readyz`)).status).toBe(200);
      const probe = await graphql({ query: 'query ReadinessProbe { time }' });
      expect(probe.headers.get('svc-cache')).toMatch(/^(MISS|HIT)$/);
    }, 60_000);
  });

  afterAll(async () => {
    for (const container of containers.reverse()) await container.stop();
    await network?.stop();
  });

  it('answers a query from the origin first (MISS), then from the cache (HIT)', async () => {
    const query = '{ todos { id title done } }';
    const miss = await graphql({ query });
    expect(miss.status).toBe(200);
    expect(miss.headers.get('svc-cache')).toBe('MISS');
    const hit = await graphql({ query });
    expect(hit.headers.get('svc-cache')).toBe('HIT');
    expect(hit.headers.get('age')).toMatch(/^\d+$/);
    expect(hit.body).toEqual(miss.body);
    expect(JSON.parse(hit.body)).toMatchObject({ data: { todos: expect.any(Array) } });
  });

  it('invalidates what a mutation changed: the next read is a MISS with the new data', async () => {
    const query = '{ todo(id: "1") { id title } }';
    await graphql({ query });
    expect((await graphql({ query })).headers.get('svc-cache')).toBe('HIT');
    const mutation = await graphql({ query: 'mutation { updateTodo(id: "1", title: "Buy oat milk") { id title } }' });
    expect(mutation.status).toBe(200);
    expect(mutation.headers.get('svc-cache')).toBe('PASS');
    const after = await graphql({ query });
    expect(after.headers.get('svc-cache')).toBe('MISS');
    expect(JSON.parse(after.body)).toEqual({ data: { todo: { id: '1', title: 'Buy oat milk' } } });
  });

  it('purges a type with the purge token, and refuses a purge without it', async () => {
    const query = '{ todos { id } }';
    await graphql({ query });
    expect((await graphql({ query })).headers.get('svc-cache')).toBe('HIT');
    const refused = await graphql({ query: 'mutation { _purgeTodo }' }, { 'svc-purge-token': 'not-the-token' });
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body)).toMatchObject({ errors: [expect.objectContaining({ message: expect.any(String) })] });
    expect((await graphql({ query })).headers.get('svc-cache')).toBe('HIT');
    const purged = await graphql({ query: 'mutation { _purgeTodo }' }, { 'svc-purge-token': PURGE_TOKEN });
    expect(purged.status).toBe(200);
    expect(JSON.parse(purged.body)).toEqual({ data: { _purgeTodo: true } });
    expect((await graphql({ query })).headers.get('svc-cache')).toBe('MISS');
  });

  it('speaks automatic persisted queries as Apollo Server does', async () => {
    const query = '{ users { id name } }';
    const persistedQuery = { version: 1, sha256Hash: createHash('sha256').update(query).digest('hex') };
    const unknown = await graphql({ extensions: { persistedQuery } });
    expect(unknown.status).toBe(200);
    expect(unknown.headers.get('cache-control')).toBe('private, no-cache, must-revalidate');
    expect(JSON.parse(unknown.body)).toEqual({
      errors: [{ message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }],
    });
    const registered = await graphql({ query, extensions: { persistedQuery } });
    expect(registered.status).toBe(200);
    expect(JSON.parse(registered.body)).toMatchObject({ data: { users: expect.any(Array) } });
    const byHash = await graphql({ extensions: { persistedQuery } });
    expect(byHash.headers.get('svc-cache')).toBe('HIT');
    expect(byHash.body).toBe(registered.body);
    const mismatch = await graphql({ query: '{ todos { id } }', extensions: { persistedQuery } });
    expect(mismatch.status).toBe(400);
  });

  it('counts what it did on /metrics', async () => {
    const text = await (await fetch(`${adminUrl}/metrics`)).text();
    expect(sampleValue(text, 'svc_cache_requests_total', { outcome: 'HIT' })).toBeGreaterThanOrEqual(4);
    expect(sampleValue(text, 'svc_cache_requests_total', { outcome: 'MISS' })).toBeGreaterThanOrEqual(4);
    expect(sampleValue(text, 'svc_cache_bytes_served_from_cache_total')).toBeGreaterThan(0);
    expect(sampleValue(text, 'svc_cache_persisted_queries_total', { event: 'not-found' })).toBe(1);
    expect(sampleValue(text, 'svc_cache_purges_total', { result: 'purged' })).toBe(1);
    expect(sampleValue(text, 'svc_cache_purges_total', { result: 'unauthorized' })).toBe(1);
    expect(sampleValue(text, 'svc_cache_invalidations_total', { policy: 'Entity', from: 'answer', result: 'ok' })).toBeGreaterThanOrEqual(1);
  });

  it('keeps answering from the origin when Redis is gone (fail-open)', async () => {
    containers.splice(containers.indexOf(redis), 1);
    await redis.stop();
    const response = await graphql({ query: '{ products { sku name } }' });
    expect(response.status).toBe(200);
    expect(response.headers.get('svc-cache')).toBe('PASS');
    expect(JSON.parse(response.body)).toMatchObject({ data: { products: expect.any(Array) } });
    expect((await fetch(`${adminUrl}/readyz`)).status).toBe(503);
  });

  async function graphql(body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; body: string }> {
    const response = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { status: response.status, headers: response.headers, body: await response.text() };
  }
});

async function dockerEngine(): Promise<{ available: true } | { available: false; reason: string }> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return { available: true };
  } catch (error) {
    return { available: false, reason: `no Docker engine answers (${error instanceof Error ? error.message : String(error)})` };
  }
}
