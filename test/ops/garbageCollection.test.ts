import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { serveCommand } from '../../src/commandLine/index.js';
import { startSidecar } from '../../src/sidecar/sidecar.js';

vi.mock('node:v8', async (importOriginal) => ({ ...(await importOriginal<typeof import('node:v8')>()), setFlagsFromString: vi.fn() }));
// Only the order of the calls matters here: no sidecar starts, and no signal handler is installed.
vi.mock('../../src/sidecar/sidecar.js', () => ({ startSidecar: vi.fn(async () => ({ close: async () => undefined })) }));
vi.mock('../../src/commandLine/signals.js', () => ({ handleShutdownSignals: () => ({ closeWith: () => undefined }) }));

const scratch = mkdtempSync(join(tmpdir(), 'svc-cache-gc-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('svc-cache serve', () => {
  it('turns V8 allocation-site pretenuring off before it starts the sidecar (docs/performance.md, Garbage collection)', async () => {
    const config = join(scratch, 'config.yaml');
    writeFileSync(config, 'origin:\n  url: http://127.0.0.1:9/graphql\n');
    await serveCommand.run({ config, 'grpc-host': '127.0.0.1', 'grpc-port': '0', 'admin-port': '0' });
    expect(vi.mocked(setFlagsFromString)).toHaveBeenCalledWith('--no-allocation-site-pretenuring');
    expect(vi.mocked(setFlagsFromString).mock.invocationCallOrder[0]).toBeLessThan(vi.mocked(startSidecar).mock.invocationCallOrder[0]!);
  });
});
