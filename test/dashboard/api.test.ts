import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pageSizeBytes, type DashboardSummary } from '../../src/dashboard/index.js';
import { postGraphQL } from '../support/origin.js';
import { startStack, type Stack } from '../support/stack.js';

/** The dashboard's JSON API on a running stack: client -> gateway -> sidecar -> demo origin. */

const TOKEN = 'dashboard-api-test-token';
const TODOS = 'query Todos { todos { id title } }';
const PRODUCTS = 'query Products { products { sku name } }';

let stack: Stack;
let admin: string;

beforeAll(async () => {
  stack = await startStack({
    purge: { tokens: [TOKEN] },
    keyFields: { types: { Product: ['sku'] } },
    redis: undefined,
  });
  admin = `http://127.0.0.1:${stack.sidecar.adminPort}`;
});
afterAll(() => stack.close());

/** The API's answers, as the tests read them. */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- assertions check the shapes

async function getJson(path: string): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${admin}${path}`);
  return { status: response.status, body: (await response.json()) as Json };
}

async function post(path: string, body: unknown, token?: string): Promise<{ status: number; text: string }> {
  const response = await fetch(`${admin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { 'svc-purge-token': token }) },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

/** Streams end just after the client has its answer: wait until the dashboard has seen `count` requests. */
async function seenRequests(count: number): Promise<DashboardSummary> {
  return vi.waitFor(async () => {
    const { body } = await getJson('/api/summary');
    const { HIT, MISS, PASS, ERROR } = body.lastHour;
    expect(HIT + MISS + PASS + ERROR).toBe(count);
    return body as DashboardSummary;
  });
}

describe('dashboard API', () => {
  it('serves the page and its assets from the admin port, a few hundred KB at most', async () => {
    const page = await fetch(`${admin}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await page.text();
    expect(html).toContain('one replica');
    expect(html).not.toMatch(/https?:\/\//);
    for (const asset of ['/dashboard/app.js', '/dashboard/app.css', '/dashboard/uplot.js', '/dashboard/uplot.css']) {
      expect((await fetch(`${admin}${asset}`)).status).toBe(200);
    }
    expect(pageSizeBytes()).toBeLessThan(300 * 1024);
    expect((await fetch(`${admin}/api/nothing`)).status).toBe(404);
    // The new user's run: HEAD, which the README lets the admin port take, was 404 on these routes.
    for (const path of ['/', '/dashboard/app.js', '/api/summary', '/api/config']) {
      const head = await fetch(`${admin}${path}`, { method: 'HEAD' });
      expect([path, head.status, head.headers.get('content-type'), await head.text()]).toEqual([path, 200, (await fetch(`${admin}${path}`)).headers.get('content-type'), '']);
    }
    expect((await fetch(`${admin}/healthz`)).status).toBe(200);
  });

  it('counts outcomes and operations of the traffic sent', async () => {
    const statuses: string[] = [];
    for (const query of [TODOS, TODOS, TODOS, PRODUCTS]) statuses.push((await postGraphQL(stack.url, { query })).headers['svc-cache']!);
    await postGraphQL(stack.url, { query: 'mutation { addTodo(title: "x") { id } }' });
    expect(statuses).toEqual(['MISS', 'HIT', 'HIT', 'MISS']);
    const summary = await seenRequests(5);
    expect(summary.lastHour).toEqual({ HIT: 2, MISS: 2, PASS: 1, ERROR: 0, hitRatio: 0.4 });
    expect(summary.store).toMatchObject({ up: true, errors: 0 });
    // No request waited for another's fetch: the sidecar reports the count, not 'not reported' (null).
    expect(summary.coalescedRequests).toBe(0);
    expect(typeof summary.replica).toBe('string');

    const { body } = await getJson('/api/operations');
    const names = body.operations.map((op: Json) => [op.operationName, op.requests, op.hitRatio]);
    expect(names).toEqual([
      ['Todos', 3, 2 / 3],
      ['Products', 1, 0],
      ['', 1, 0],
    ]);
    expect(body.operations[0].documentHash).toMatch(/^[0-9a-f]{12}$/);
    expect(body.operations[2].mainPassReason).toBe('mutation');
    expect(typeof body.operations[1].originLatencyP50Ms).toBe('number');

    const series = (await getJson('/api/timeseries?seconds=120')).body;
    expect(series.time.length).toBe(120);
    expect(series.hit.reduce((a: number, b: number) => a + b, 0)).toBe(2);
  });

  it('refuses purges and inspections without the right token, reading no body, and counts each refusal', async () => {
    const unauthorized = async (): Promise<number> =>
      Number(/^svc_cache_purges_total\{result="unauthorized"\} (\d+)$/m.exec(await (await fetch(`${admin}/metrics`)).text())?.[1]);
    const before = await unauthorized();
    for (const token of [undefined, 'wrong-token']) {
      const purge = await post('/api/purge', { query: 'mutation { _purgeAll }' }, token);
      expect(purge).toEqual({
        status: 401,
        text: JSON.stringify({ error: 'unauthorized', message: 'a purge token is required in the svc-purge-token header' }),
      });
      expect((await post('/api/inspect', { query: TODOS }, token)).status).toBe(401);
      expect(await post('/api/token', {}, token)).toEqual({ status: 200, text: '{"accepted":false}' });
    }
    expect(await post('/api/token', {}, TOKEN)).toEqual({ status: 200, text: '{"accepted":true}' });
    // The admin-surface audit: guesses at the page's API were neither logged nor counted.
    expect((await unauthorized()) - before).toBe(6);
  });

  // The admin-surface audit: the page could be framed by another site, and a site whose DNS name
  // points at the admin port (DNS rebinding) could read the API as its own origin.
  it('answers with headers that keep the page out of frames, and only for a Host of its own', async () => {
    for (const path of ['/', '/dashboard/app.js', '/api/summary']) {
      const response = await fetch(`${admin}${path}`);
      expect([response.headers.get('x-frame-options'), response.headers.get('content-security-policy'), response.headers.get('x-content-type-options')]).toEqual([
        'DENY',
        "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        'nosniff',
      ]);
    }
    const withHost = (host: string, path = '/api/config') =>
      new Promise<number>((resolve, reject) => {
        request(`${admin}${path}`, { headers: { host } }, (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        })
          .on('error', reject)
          .end();
      });
    expect(await withHost('rebound.attacker.example:9901')).toBe(421);
    expect(await withHost('rebound.attacker.example', '/')).toBe(421);
    expect(await withHost('rebound.attacker.example', '/metrics')).toBe(200);
    for (const host of ['127.0.0.1:9901', 'localhost', '[::1]:9901', 'svc-cache', 'svc-cache-admin.apps.svc', 'svc-cache-admin.apps.svc.cluster.local:9901']) {
      expect(await withHost(host), host).toBe(200);
    }
  });

  it('refuses a body over limits.maxRequestBodyBytes, and inspection input that is not a request', async () => {
    const tooLarge = await post('/api/purge', { query: `mutation { _purgeAll } # ${'x'.repeat(1024 * 1024)}` }, TOKEN);
    expect(tooLarge).toEqual({ status: 413, text: '{"error":"body-too-large"}' });
    const bad = [
      ['[]', 'expected a JSON object'],
      ['{"query": ""}', 'query: expected a non-empty string'],
      ['{"query": "{ time }", "variables": [1]}', 'variables: expected an object'],
      ['{"query": "{ time }", "headers": {"x": 1}}', 'headers: expected an object of strings'],
    ];
    for (const [body, message] of bad) {
      const response = await fetch(`${admin}/api/inspect`, { method: 'POST', headers: { 'svc-purge-token': TOKEN }, body });
      expect({ status: response.status, body: await response.json() }).toEqual({ status: 400, body: { error: 'invalid-input', message } });
    }
  });

  it('purges through the purge API, so the next query is a MISS, and lists the purge', async () => {
    expect((await postGraphQL(stack.url, { query: TODOS })).headers['svc-cache']).toBe('HIT');
    const purge = await post('/api/purge', { query: 'mutation { _purgeTodo }' }, TOKEN);
    expect(purge).toEqual({ status: 200, text: JSON.stringify({ data: { _purgeTodo: true } }) });
    expect((await postGraphQL(stack.url, { query: TODOS })).headers['svc-cache']).toBe('MISS');
    const { body } = await getJson('/api/purges');
    expect(body.changes[0]).toMatchObject({ kind: 'purge', fields: ['_purgeTodo'], mode: 'hard', result: 'ok' });
    expect(body.changes[0].removedEntries).toBe(1);
  });

  it('answers a request that is no purge without sending it anywhere', async () => {
    const notPurge = await post('/api/purge', { query: TODOS }, TOKEN);
    expect(notPurge.status).toBe(400);
    expect(JSON.parse(notPurge.text).errors[0].extensions.code).toBe('NOT_A_PURGE');
  });

  it('inspects a query: cached now or not, its bucket and matched rules; mutations are refused', async () => {
    await postGraphQL(stack.url, { query: PRODUCTS });
    const cached = await post('/api/inspect', { query: PRODUCTS, headers: { host: new URL(stack.url).host } }, TOKEN);
    expect(cached.status).toBe(200);
    expect(JSON.parse(cached.text)).toMatchObject({
      decision: 'HIT',
      cachedNow: true,
      keyParts: { operationName: 'Products', variables: {} },
      scope: 'PUBLIC',
      matchedRules: 'all queries',
      passReason: null,
    });
    const fresh = JSON.parse((await post('/api/inspect', { query: 'query { time }' }, TOKEN)).text);
    expect(fresh).toMatchObject({ decision: 'MISS', cachedNow: false, scope: 'PUBLIC', matchedRules: 'all queries' });
    // An outside audit: sent with the purge token, introspection was answered by the purge API's schema.
    const introspection = JSON.parse((await post('/api/inspect', { query: '{ __schema { queryType { name } } }' }, TOKEN)).text);
    expect(introspection).toMatchObject({ decision: 'PASS', passReason: 'introspection' });
    const mutation = JSON.parse((await post('/api/inspect', { query: 'mutation { _purgeAll }' }, TOKEN)).text);
    expect(mutation.error).toBe('not-a-query');
    expect((await post('/api/inspect', { variables: {} }, TOKEN)).status).toBe(400);
    // The inspected query was never fetched: it is still not cached.
    expect((await postGraphQL(stack.url, { query: 'query { time }' })).headers['svc-cache']).toBe('MISS');
  });

  it('shows the configuration with its secrets redacted', async () => {
    const { body } = await getJson('/api/config');
    expect(body.config.purge).toEqual({ tokens: ['[redacted]'], header: 'svc-purge-token' });
    expect(body.config.rules).toEqual([{ description: 'all queries', types: ['Query'], maxAge: 60, swr: 0, staleIfError: 0 }]);
    expect(body.lastReload).toEqual({});
    expect(JSON.stringify(body)).not.toContain(TOKEN);
  });
});

describe('dashboard.enabled: false', () => {
  it('leaves only the health and metrics endpoints', async () => {
    const off = await startStack({ dashboard: { enabled: false } });
    try {
      const base = `http://127.0.0.1:${off.sidecar.adminPort}`;
      expect((await fetch(`${base}/`)).status).toBe(404);
      expect((await fetch(`${base}/api/summary`)).status).toBe(404);
      expect((await fetch(`${base}/metrics`)).status).toBe(200);
      await postGraphQL(off.url, { query: TODOS });
      // The metric is counted in the same step as the dashboard would be told: once it shows, the stream has ended.
      await vi.waitFor(async () => expect(await (await fetch(`${base}/metrics`)).text()).toContain('svc_cache_requests_total{outcome="MISS"} 1'));
      expect(off.sidecar.dashboard.timeseries(60).miss.reduce((a, b) => a + b, 0)).toBe(0);
    } finally {
      await off.close();
    }
  });
});
