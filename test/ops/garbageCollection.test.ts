import { describe, expect, it, vi } from 'vitest';
import { setFlagsFromString } from 'node:v8';
import { startTestSidecar } from '../support/sidecar.js';

vi.mock('node:v8', async (importOriginal) => ({ ...(await importOriginal<typeof import('node:v8')>()), setFlagsFromString: vi.fn() }));

describe('the sidecar process', () => {
  it('turns V8 allocation-site pretenuring off before it serves (README, Performance, Garbage collection)', async () => {
    const sidecar = await startTestSidecar();
    try {
      expect(vi.mocked(setFlagsFromString)).toHaveBeenCalledWith('--no-allocation-site-pretenuring');
    } finally {
      await sidecar.close();
    }
  });
});
