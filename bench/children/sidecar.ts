import { BENCH_JWT_SECRET } from '../workload.js';
import { answerHarness } from './control.js';

/**
 * The sidecar as `svc-cache serve` runs it, on the Redis and demo origin the harness started: the
 * compiled dist/ build (`npm run bench` builds first), not the TypeScript sources through tsx, so
 * the figures are those of the code production runs.
 */
const { configSchema } = (await import(new URL('../../dist/config/schema.js', import.meta.url).href)) as typeof import('../../src/config/schema.js');
const { silentLogger } = (await import(new URL('../../dist/observability/log.js', import.meta.url).href)) as typeof import('../../src/observability/log.js');
const { startSidecar, stopPretenuring } = (await import(new URL('../../dist/sidecar/index.js', import.meta.url).href)) as typeof import('../../src/sidecar/index.js');

// `dashboard off` measures what the dashboard's per-request bookkeeping costs a HIT (README, Performance);
// `header` and `jwt` put every query in a scope keyed on a header, or on a verified JWT's `sub`.
const [redisUrl, originUrl, dashboard = 'on', scope = 'public'] = process.argv.slice(2);
if (redisUrl === undefined || originUrl === undefined || (dashboard !== 'on' && dashboard !== 'off') || !['public', 'header', 'jwt'].includes(scope)) {
  throw new Error('usage: sidecar.ts REDIS_URL ORIGIN_URL [on|off] [public|header|jwt]');
}
const SCOPE_NAMES: Record<string, string> = { public: 'PUBLIC', header: 'TEAM', jwt: 'USER' };

// As `svc-cache serve` does before it starts the sidecar (docs/performance.md, Garbage collection).
stopPretenuring();
const sidecar = await startSidecar({
  config: configSchema.parse({
    origin: { url: originUrl },
    redis: { url: redisUrl },
    scopes: {
      TEAM: 'header:x-team',
      USER: { definition: 'header:authorization', jwt: { claim: 'sub', algorithms: ['HS256'], secret: BENCH_JWT_SECRET } },
    },
    rules: [{ description: 'every query for ten minutes', types: ['Query'], maxAge: 600, scope: SCOPE_NAMES[scope] }],
    dashboard: { enabled: dashboard === 'on' },
  }),
  grpcPort: 0,
  adminPort: 0,
  host: '127.0.0.1',
  logger: silentLogger(),
});
await sidecar.schemaReady;
answerHarness({ port: sidecar.grpcPort, close: () => sidecar.close(1000) });
