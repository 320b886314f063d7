import { configSchema } from '../../src/config/schema.js';
import { silentLogger } from '../../src/observability/log.js';
import { startSidecar } from '../../src/sidecar/sidecar.js';
import { answerHarness } from './control.js';

/** The sidecar as `svc-cache serve` runs it, on the Redis and demo origin the harness started. */

const [redisUrl, originUrl] = process.argv.slice(2);
if (redisUrl === undefined || originUrl === undefined) throw new Error('usage: sidecar.ts REDIS_URL ORIGIN_URL');

const sidecar = await startSidecar({
  config: configSchema.parse({
    origin: { url: originUrl },
    redis: { url: redisUrl },
    rules: [{ description: 'every query for ten minutes', types: ['Query'], maxAge: 600 }],
  }),
  grpcPort: 0,
  adminPort: 0,
  host: '127.0.0.1',
  logger: silentLogger(),
});
await sidecar.schemaReady;
answerHarness({ port: sidecar.grpcPort, close: () => sidecar.close(1000) });
