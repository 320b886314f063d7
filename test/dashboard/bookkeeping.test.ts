import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { Dashboard, isAllowedHost, REDACTED, redactedConfig, TOP_OPERATIONS, type RequestSummary } from '../../src/dashboard/index.js';
import { SHOWN_NAME_CHARACTERS } from '../../src/dashboard/shownNames.js';
import { heapKeptBy } from '../support/heap.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

function summary(overrides: Partial<RequestSummary>): RequestSummary {
  return {
    outcome: 'HIT',
    passReason: undefined,
    errorCode: undefined,
    operationName: 'Todos',
    documentHash: 'aaaaaaaaaaaa',
    originLatencyMs: undefined,
    bytesServedFromCache: 0,
    ...overrides,
  };
}

function dashboardAt(clock: { now: number }): Dashboard {
  const config = configSchema.parse({ origin: { url: 'http://origin.test/graphql' } });
  return new Dashboard({
    config: () => config,
    storeHealth: async () => ({ up: true, roundTripMs: 1, errors: 0 }),
    replica: 'replica-1',
    now: () => clock.now,
  });
}

describe('timeline', () => {
  it('counts outcomes per second and reads the hit ratio over HIT, MISS and PASS', async () => {
    const clock = { now: T0 };
    const dashboard = dashboardAt(clock);
    for (const outcome of ['HIT', 'HIT', 'HIT', 'MISS', 'ERROR', undefined] as const) dashboard.record(summary({ outcome }));
    clock.now += 1000;
    dashboard.record(summary({ outcome: 'PASS', passReason: 'no-rule', originLatencyMs: 30 }));

    const series = dashboard.timeseries(3);
    expect(series.time).toEqual([T0 / 1000 - 1, T0 / 1000, T0 / 1000 + 1]);
    expect(series.hit).toEqual([0, 3, 0]);
    expect(series.miss).toEqual([0, 1, 0]);
    expect(series.pass).toEqual([0, 0, 1]);
    expect(series.error).toEqual([0, 1, 0]);
    expect(series.hitRatio).toEqual([null, 0.75, 0]);
    expect(series.passP50).toEqual([null, null, 50]);
    const totals = (await dashboard.summary()).lastHour;
    expect(totals).toEqual({ HIT: 3, MISS: 1, PASS: 1, ERROR: 1, hitRatio: 0.6 });
  });

  it('forgets seconds older than an hour when their slot is reused', async () => {
    const clock = { now: T0 };
    const dashboard = dashboardAt(clock);
    dashboard.record(summary({ outcome: 'MISS' }));
    clock.now += 3600 * 1000;
    dashboard.record(summary({ outcome: 'HIT' }));
    expect((await dashboard.summary()).lastHour).toEqual({ HIT: 1, MISS: 0, PASS: 0, ERROR: 0, hitRatio: 1 });
    expect(dashboard.timeseries().hit.length).toBe(3600);
  });

  it('reads MISS latency percentiles from the fixed buckets', () => {
    const clock = { now: T0 };
    const dashboard = dashboardAt(clock);
    for (let i = 0; i < 99; i += 1) dashboard.record(summary({ outcome: 'MISS', originLatencyMs: 3 }));
    dashboard.record(summary({ outcome: 'MISS', originLatencyMs: 700 }));
    const series = dashboard.timeseries(1);
    expect(series.missP50).toEqual([5]);
    expect(series.missP99).toEqual([5]);
    dashboard.record(summary({ outcome: 'MISS', originLatencyMs: 700 }));
    expect(dashboard.timeseries(1).missP99).toEqual([1000]);
  });
});

describe('top operations', () => {
  it('lists operations by requests with their hit ratio, main PASS reason and origin latency', () => {
    const dashboard = dashboardAt({ now: T0 });
    dashboard.record(summary({ outcome: 'HIT' }));
    dashboard.record(summary({ outcome: 'MISS', originLatencyMs: 12 }));
    for (const passReason of ['no-rule', 'no-rule', 'bypass-header']) {
      dashboard.record(summary({ operationName: '', documentHash: 'bbbbbbbbbbbb', outcome: 'PASS', passReason, originLatencyMs: 4 }));
    }
    dashboard.record(summary({ operationName: undefined, documentHash: undefined, outcome: 'PASS' }));

    expect(dashboard.topOperations()).toEqual([
      { operationName: '', documentHash: 'bbbbbbbbbbbb', requests: 3, overcount: 0, hitRatio: 0, mainPassReason: 'no-rule', originLatencyP50Ms: 5 },
      { operationName: 'Todos', documentHash: 'aaaaaaaaaaaa', requests: 2, overcount: 0, hitRatio: 0.5, mainPassReason: null, originLatencyP50Ms: 20 },
    ]);
  });

  it('keeps at most K operations, a heavy one surviving a flood of one-off documents', () => {
    const dashboard = dashboardAt({ now: T0 });
    for (let i = 0; i < 5000; i += 1) {
      if (i % 10 === 0) dashboard.record(summary({ documentHash: 'heavyheavy00' }));
      dashboard.record(summary({ documentHash: `once${String(i).padStart(8, '0')}` }));
    }
    const rows = dashboard.topOperations();
    expect(rows.length).toBe(TOP_OPERATIONS);
    expect(rows[0]).toMatchObject({ documentHash: 'heavyheavy00', requests: 500 });
  });

  it('keeps and shows at most 100 characters of an operation name, marking how many it cut', () => {
    const dashboard = dashboardAt({ now: T0 });
    for (let i = 0; i < TOP_OPERATIONS; i += 1) {
      dashboard.record(summary({ operationName: `Op${String(i).padStart(3, '0')}${'x'.repeat(99_000)}`, documentHash: `hash${String(i).padStart(8, '0')}` }));
    }
    const rows = dashboard.topOperations();
    expect(SHOWN_NAME_CHARACTERS).toBe(100);
    expect(rows.map((row) => row.operationName)).toEqual(
      Array.from({ length: TOP_OPERATIONS }, (_, i) => `Op${String(i).padStart(3, '0')}${'x'.repeat(95)}…[+98905]`),
    );
    expect(JSON.stringify({ operations: rows }).length).toBeLessThan(30_000);
  });

  it('keeps nothing of the query text an operation name was cut from', () => {
    const dashboard = dashboardAt({ now: T0 });
    const TEXT_BYTES = 100 * 1024;
    const { keptBytes } = heapKeptBy(() => {
      for (let i = 0; i < TOP_OPERATIONS; i += 1) {
        // As graphql-js has it: a name cut out of the query text, which such a slice keeps alive.
        const text = `query ALongOperationName${String(i).padStart(3, '0')} { todos { id } } #${'x'.repeat(TEXT_BYTES)}`;
        dashboard.record(summary({ operationName: text.slice(6, 6 + 'ALongOperationName000'.length), documentHash: `hash${String(i).padStart(8, '0')}` }));
      }
    });
    expect(dashboard.topOperations().map((row) => row.operationName)).toHaveLength(TOP_OPERATIONS);
    // The texts themselves would be 10 MiB.
    expect(keptBytes).toBeLessThan((TOP_OPERATIONS * TEXT_BYTES) / 10);
  });

  it('keeps two long names that share their first 100 characters as two rows, told apart by what was cut', () => {
    const dashboard = dashboardAt({ now: T0 });
    const prefix = 'Q'.repeat(150);
    dashboard.record(summary({ operationName: `${prefix}One`, documentHash: 'cccccccccccc' }));
    dashboard.record(summary({ operationName: `${prefix}One`, documentHash: 'cccccccccccc' }));
    dashboard.record(summary({ operationName: `${prefix}Three`, documentHash: 'dddddddddddd' }));
    expect(dashboard.topOperations().map(({ operationName, documentHash, requests }) => ({ operationName, documentHash, requests }))).toEqual([
      { operationName: `${'Q'.repeat(100)}…[+53]`, documentHash: 'cccccccccccc', requests: 2 },
      { operationName: `${'Q'.repeat(100)}…[+55]`, documentHash: 'dddddddddddd', requests: 1 },
    ]);
  });
});

describe('recent purges and invalidations', () => {
  it('keeps the last 100, newest first, with fields and tags capped', () => {
    const clock = { now: T0 };
    const dashboard = dashboardAt(clock);
    for (let i = 0; i < 105; i += 1) {
      clock.now = T0 + i * 1000;
      dashboard.recordChange({ kind: 'purge', fields: [`purge${i}`], tags: [], removedEntries: i, result: 'ok' });
    }
    const tags = Array.from({ length: 25 }, (_, i) => `t${i}`);
    dashboard.recordChange({ kind: 'invalidation', fields: ['mutationPolicy Entity'], tags, removedEntries: 2, result: 'ok' });
    const changes = dashboard.recentChanges();
    expect(changes.length).toBe(100);
    expect(changes[0]).toEqual({
      kind: 'invalidation',
      at: new Date(T0 + 104_000).toISOString(),
      fields: ['mutationPolicy Entity'],
      tags: tags.slice(0, 20),
      moreTags: 5,
      removedEntries: 2,
      staleEntries: 0,
      result: 'ok',
      mode: 'hard',
      replica: 'replica-1',
    });
    expect(changes[1]!.fields).toEqual(['purge104']);
    expect(changes[99]!.fields).toEqual(['purge6']);
  });

  it('keeps at most 100 characters of each field and tag, marking how many it cut', () => {
    const dashboard = dashboardAt({ now: T0 });
    const operationTag = `operation:${'n'.repeat(500)}`;
    dashboard.recordChange({ kind: 'purge', fields: [`f${'x'.repeat(200)}`], tags: [operationTag, 'type:Todo'], removedEntries: 0, result: 'ok' });
    expect(dashboard.recentChanges()[0]).toMatchObject({
      fields: [`f${'x'.repeat(99)}…[+101]`],
      tags: [`operation:${'n'.repeat(90)}…[+410]`, 'type:Todo'],
      moreTags: 0,
    });
  });
});

describe('configuration view', () => {
  it('shows every setting but the secrets', () => {
    const config = configSchema.parse({
      origin: { url: 'http://origin.test/graphql' },
      redis: { url: 'redis://cache:s3cret-pass@redis.internal:6379/0' },
      purge: { tokens: ['token-one', 'token-two'] },
      cache: { scopeKeySecret: 'a-scope-key-secret-of-32-bytes!!' },
      scopes: { TEAM: 'header:x-team' },
      rules: [{ types: ['Query'], maxAge: 60, scope: 'TEAM' }],
    });
    const view = redactedConfig(config) as typeof config;
    expect(view.purge).toEqual({ tokens: [REDACTED, REDACTED], header: 'svc-purge-token' });
    expect(view.cache.scopeKeySecret).toBe(REDACTED);
    expect(view.redis!.url).toBe(`redis://cache:${REDACTED}@redis.internal:6379/0`);
    expect(view.scopes).toEqual({ TEAM: 'header:x-team' });
    expect(view.rules).toEqual(config.rules);
    expect(JSON.stringify(view)).not.toMatch(/s3cret-pass|token-one|token-two|a-scope-key-secret/);
  });

  it("shows a URL's query names but not their values, which may carry its access token", () => {
    const config = configSchema.parse({
      origin: { url: 'http://origin.test/graphql?api_key=origin-key' },
      scopes: { USER: { definition: 'header:authorization', jwt: { claim: 'sub', algorithms: ['RS256'], jwksUrl: 'https://idp.test/jwks?token=jwks-token&v' } } },
    });
    const view = redactedConfig(config) as typeof config;
    expect(view.origin.url).toBe(`http://origin.test/graphql?api_key=${REDACTED}`);
    expect(JSON.stringify(view.scopes)).toContain(`"jwksUrl":"https://idp.test/jwks?token=${REDACTED}&v"`);
    expect(JSON.stringify(view)).not.toMatch(/origin-key|jwks-token/);
  });

  it("shows the stored documents' manifest by its path and how many documents it holds, not their text", () => {
    const config = { ...configSchema.parse({ origin: { url: 'http://origin.test/graphql' } }), persistedDocuments: { manifest: '/etc/svc-cache/manifest.json', documents: new Map([['d1', '{ a }']]) } };
    expect((redactedConfig(config) as Record<string, unknown>).persistedDocuments).toEqual({ manifest: '/etc/svc-cache/manifest.json', documents: 1 });
  });

  it("hides a JWT scope's secret and public key, and shows the rest of its settings", () => {
    const publicKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const config = configSchema.parse({
      origin: { url: 'http://origin.test/graphql' },
      scopes: {
        USER: { definition: 'header:authorization', jwt: { claim: 'sub', algorithms: ['HS256'], secret: 'jwt-hmac-secret', issuer: 'https://auth.test' } },
        ORG: { definition: 'cookie:session', jwt: { claim: 'org.id', algorithms: ['ES256'], publicKey } },
      },
    });
    expect((redactedConfig(config) as typeof config).scopes).toEqual({
      USER: {
        definition: 'header:authorization',
        jwt: { claim: 'sub', algorithms: ['HS256'], secret: REDACTED, issuer: 'https://auth.test', clockToleranceSeconds: 0 },
      },
      ORG: { definition: 'cookie:session', jwt: { claim: 'org.id', algorithms: ['ES256'], publicKey: REDACTED, clockToleranceSeconds: 0 } },
    });
  });

  it('redacts by what the schema marks secret, not by what a key is called: booleans, numbers and scopes named like secrets show', () => {
    for (const publicForCredentialedRequests of [true, false]) {
      const config = configSchema.parse({
        origin: { url: 'http://origin.test/graphql' },
        cache: { publicForCredentialedRequests, scopeKeySecret: 'a-scope-key-secret-of-32-bytes!!' },
        scopes: {
          API_TOKEN: 'header:x-api-token',
          SESSION_SECRET: { definition: 'cookie:session', jwt: { claim: 'sub', algorithms: ['HS256'], secret: 'jwt-hmac-secret' } },
        },
      });
      const view = redactedConfig(config) as typeof config;
      expect(view.cache).toEqual({ ...config.cache, scopeKeySecret: REDACTED });
      expect(view.cache.publicForCredentialedRequests).toBe(publicForCredentialedRequests);
      expect(view.scopes).toEqual({
        API_TOKEN: 'header:x-api-token',
        SESSION_SECRET: { definition: 'cookie:session', jwt: { claim: 'sub', algorithms: ['HS256'], secret: REDACTED, clockToleranceSeconds: 0 } },
      });
    }
  });

  it('hides the password of every Redis URL, the Cluster and Sentinel nodes included, and shows which servers', () => {
    const cluster = configSchema.parse({
      origin: { url: 'http://origin.test/graphql' },
      redis: { url: 'rediss://:cluster-pass@seed.internal:6379', cluster: { nodes: ['redis://:node-pass@node-a:7000', 'node-b:7001'] } },
    });
    const sentinel = configSchema.parse({
      origin: { url: 'http://origin.test/graphql' },
      redis: { sentinel: { name: 'main', sentinels: ['redis://watcher:sentinel-pass@sentinel-a:26379'] } },
    });
    const clusterView = redactedConfig(cluster) as typeof cluster;
    const sentinelView = redactedConfig(sentinel) as typeof sentinel;
    expect(clusterView.redis!.url).toBe(`rediss://:${REDACTED}@seed.internal:6379`);
    expect(clusterView.redis!.cluster!.nodes).toEqual([`redis://:${REDACTED}@node-a:7000`, 'node-b:7001']);
    expect(sentinelView.redis!.sentinel!.sentinels).toEqual([`redis://watcher:${REDACTED}@sentinel-a:26379`]);
    expect(JSON.stringify([clusterView, sentinelView])).not.toMatch(/cluster-pass|node-pass|sentinel-pass/);
  });
});

describe('isAllowedHost', () => {
  it("takes the admin port's own addresses and names, and other names only when configured", () => {
    for (const host of [undefined, '10.0.0.7:9901', 'localhost:9901', '[fe80::1]:9901', 'svc-cache', 'admin.team.svc', 'admin.team.svc.cluster.local']) {
      expect(isAllowedHost(host, []), String(host)).toBe(true);
    }
    expect(isAllowedHost('dashboard.example.com', [])).toBe(false);
    expect(isAllowedHost('Dashboard.Example.com:443', ['dashboard.example.com'])).toBe(true);
    expect(isAllowedHost('svc.attacker.example', [])).toBe(false);
    // A fully qualified name's final dot changes nothing, either way.
    expect([isAllowedHost('localhost.:9901', []), isAllowedHost('admin.team.svc.cluster.local.', []), isAllowedHost('evil.example.', [])]).toEqual([true, true, false]);
    expect(isAllowedHost('dashboard.example.com.', ['dashboard.example.com'])).toBe(true);
  });
});
