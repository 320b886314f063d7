import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../src/observability/log.js';
import { startSidecar, type Sidecar } from '../../src/sidecar/sidecar.js';
import { demoSchemaSDL } from './origin.js';
import { testConfig, type ConfigInput } from './stack.js';

/**
 * A sidecar alone, its schema the demo origin's SDL from a file, for tests that speak ext_proc to it
 * directly. The origin URL is never called.
 */
export async function startTestSidecar(input: ConfigInput = {}): Promise<Sidecar> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cache-sidecar-'));
  const schemaFile = join(dir, 'schema.graphql');
  writeFileSync(schemaFile, demoSchemaSDL);
  const sidecar = await startSidecar({
    config: testConfig('http://127.0.0.1:9/graphql', { schema: { file: schemaFile }, ...input }),
    grpcPort: 0,
    adminPort: 0,
    host: '127.0.0.1',
    logger: silentLogger(),
  });
  await sidecar.schemaReady;
  return {
    ...sidecar,
    close: async (graceMs) => {
      await sidecar.close(graceMs);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
