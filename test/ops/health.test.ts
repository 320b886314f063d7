import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ProcessingRequest } from '../../src/extproc/messages.js';
import { EXT_PROC_SERVICE } from '../../src/extproc/protocol.js';
import { silentLogger } from '../../src/observability/log.js';
import { startSidecar, type Sidecar } from '../../src/sidecar/sidecar.js';
import { connectExtProc, envoyPostHeaders, headerMap, ORIGIN_BODY, QUERY_BODY, setHeaders } from '../support/extprocClient.js';
import { startTestSidecar } from '../support/sidecar.js';
import { testConfig } from '../support/stack.js';
import { sampleValue, scrape } from './prometheusText.js';

/** The admin port (`/healthz`, `/readyz`, `/metrics`) and the gRPC health service on the ext_proc port. */

const POST_HEADERS = envoyPostHeaders();

async function get(port: number, path: string): Promise<{ status: number; contentType: string | null; text: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, contentType: response.headers.get('content-type'), text: await response.text() };
}

type HealthClient = grpc.Client & {
  check(request: { service: string }, callback: (error: grpc.ServiceError | null, response?: { status: string }) => void): void;
  watch(request: { service: string }): grpc.ClientReadableStream<{ status: string }>;
};

function connectHealth(port: number): HealthClient {
  const definition = protoLoader.loadSync(healthProtoPath, { keepCase: true, enums: String, defaults: true });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as {
    grpc: { health: { v1: { Health: new (address: string, credentials: grpc.ChannelCredentials) => HealthClient } } };
  };
  return new loaded.grpc.health.v1.Health(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
}

function check(client: HealthClient, service: string): Promise<string> {
  return new Promise((resolve, reject) =>
    client.check({ service }, (error, response) => (error ? reject(error) : resolve(response!.status))),
  );
}

describe('admin port', () => {
  let sidecar: Sidecar;

  beforeAll(async () => {
    sidecar = await startTestSidecar();
  });
  afterAll(async () => {
    await sidecar.close(1000);
  });

  it('answers /healthz while the process runs', async () => {
    expect(await get(sidecar.adminPort, '/healthz')).toEqual({ status: 200, contentType: 'text/plain; charset=utf-8', text: 'ok\n' });
  });

  it('answers /readyz with 200 once the schema is loaded and the store answers', async () => {
    expect(await get(sidecar.adminPort, '/readyz')).toMatchObject({ status: 200, text: 'ready\n' });
  });

  it('serves /metrics in the Prometheus text format', async () => {
    const metrics = await get(sidecar.adminPort, '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(sampleValue(metrics.text, 'svc_cache_requests_total', { outcome: 'HIT' })).toBe(0);
  });

  it.each(['/healthz', '/readyz', '/metrics'])('answers 405 to a method other than GET or HEAD on %s', async (path) => {
    const response = await fetch(`http://127.0.0.1:${sidecar.adminPort}${path}`, { method: 'DELETE' });
    expect([response.status, response.headers.get('allow'), await response.text()]).toEqual([405, 'GET, HEAD', 'method not allowed\n']);
    expect((await fetch(`http://127.0.0.1:${sidecar.adminPort}${path}`, { method: 'HEAD' })).status).toBe(200);
  });

  it('answers 404 elsewhere', async () => {
    // '/' is the dashboard page (README, Dashboard).
    expect((await get(sidecar.adminPort, '/nothing')).status).toBe(404);
  });
});

describe('/readyz when svc-cache cannot cache', () => {
  let sidecar: Sidecar | undefined;
  afterEach(async () => {
    await sidecar?.close(1000);
    sidecar = undefined;
  });

  it('says the origin schema is not loaded, and why', async () => {
    sidecar = await startSidecar({
      config: testConfig('http://127.0.0.1:9/graphql'),
      grpcPort: 0,
      adminPort: 0,
      host: '127.0.0.1',
      logger: silentLogger(),
    });
    const readiness = await get(sidecar.adminPort, '/readyz');
    expect(readiness.status).toBe(503);
    expect(readiness.text).toMatch(/^not ready: origin schema: .+/);
    expect((await get(sidecar.adminPort, '/healthz')).status).toBe(200);
  });

  it('says the store does not answer, and why', async () => {
    sidecar = await startTestSidecar({ redis: { url: 'redis://127.0.0.1:1', commandTimeoutMs: 100 } });
    const readiness = await get(sidecar.adminPort, '/readyz');
    expect(readiness.status).toBe(503);
    expect(readiness.text).toMatch(/^not ready: store: .+/);
  });
});

describe('gRPC health service on the ext_proc port', () => {
  let sidecar: Sidecar;
  let health: HealthClient;

  beforeAll(async () => {
    sidecar = await startTestSidecar();
    health = connectHealth(sidecar.grpcPort);
  });
  afterAll(async () => {
    health.close();
    await sidecar.close(1000);
  });

  it('reports SERVING for the server as a whole and for the ext_proc service', async () => {
    expect(await check(health, '')).toBe('SERVING');
    expect(await check(health, EXT_PROC_SERVICE)).toBe('SERVING');
  });

  it('answers NOT_FOUND for a service it does not run', async () => {
    await expect(check(health, 'grpc.unknown.Service')).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
  });
});

describe('shutdown', () => {
  it('turns NOT_SERVING and not ready, takes no new streams, and finishes the open one before closing', async () => {
    const sidecar = await startTestSidecar();
    const extProc = connectExtProc(sidecar.grpcPort);
    const health = connectHealth(sidecar.grpcPort);
    try {
      const open = extProc.open();
      expect((await open.exchange(POST_HEADERS)).response).toBe('request_headers');

      const watch = health.watch({ service: EXT_PROC_SERVICE });
      const statuses: string[] = [];
      const waiters: Array<{ status: string; resolve: () => void }> = [];
      const statusSeen = (status: string): Promise<void> =>
        new Promise((resolve) => (statuses.includes(status) ? resolve() : waiters.push({ status, resolve })));
      watch.on('data', ({ status }: { status: string }) => {
        statuses.push(status);
        for (const waiter of waiters) if (waiter.status === status) waiter.resolve();
      });
      watch.on('error', () => undefined);
      await statusSeen('SERVING');

      let closed = false;
      const closing = sidecar.close(10_000).then(() => (closed = true));
      await statusSeen('NOT_SERVING');
      watch.cancel();
      expect(statuses).toEqual(['SERVING', 'NOT_SERVING']);
      expect(await get(sidecar.adminPort, '/readyz')).toMatchObject({ status: 503, text: 'not ready: shutting down\n' });
      expect(closed).toBe(false);

      const late = connectExtProc(sidecar.grpcPort).open();
      await expect(late.exchange(POST_HEADERS)).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });

      expect((await open.exchange({ request_body: { body: QUERY_BODY, end_of_stream: true } })).response).toBe('request_body');
      const responseHeaders: ProcessingRequest = {
        response_headers: {
          headers: headerMap({ ':status': '200', 'content-type': 'application/json', 'content-length': String(ORIGIN_BODY.length) }),
          end_of_stream: false,
        },
      };
      expect((await open.exchange(responseHeaders)).response).toBe('response_headers');
      const last = await open.exchange({ response_body: { body: ORIGIN_BODY, end_of_stream: true } });
      expect(setHeaders(last.response_body?.response?.header_mutation)).toEqual({ 'svc-cache': 'MISS' });
      open.halfClose();
      expect((await open.status).code).toBe(grpc.status.OK);

      const started = Date.now();
      await closing;
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      extProc.close();
      health.close();
    }
  });

  it('cuts streams still open at the deadline', async () => {
    const sidecar = await startTestSidecar();
    const extProc = connectExtProc(sidecar.grpcPort);
    try {
      const open = extProc.open();
      await open.exchange(POST_HEADERS);
      const started = Date.now();
      await sidecar.close(300);
      expect(Date.now() - started).toBeLessThan(3000);
      expect((await open.status).code).not.toBe(grpc.status.OK);
      const text = await sidecar.metrics.exposition();
      expect(sampleValue(text, 'svc_cache_streams_active')).toBe(0);
    } finally {
      extProc.close();
    }
  });
});

describe('metrics registries', () => {
  it('are separate per sidecar', async () => {
    const first = await startTestSidecar();
    const second = await startTestSidecar();
    try {
      first.metrics.recordOutcome('HIT');
      expect(sampleValue(await scrape(first.adminPort), 'svc_cache_requests_total', { outcome: 'HIT' })).toBe(1);
      expect(sampleValue(await scrape(second.adminPort), 'svc_cache_requests_total', { outcome: 'HIT' })).toBe(0);
    } finally {
      await first.close(1000);
      await second.close(1000);
    }
  });
});
