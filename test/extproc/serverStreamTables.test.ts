import * as grpc from '@grpc/grpc-js';
import { describe, expect, it, vi } from 'vitest';
import type { DecisionEngine } from '../../src/engine/index.js';
import { startExtProcServer } from '../../src/extproc/server.js';
import { adoptStreamTables } from '../../src/extproc/streamTable.js';
import { Metrics } from '../../src/observability/index.js';
import { recordingLogger } from '../support/recordingLogger.js';

vi.mock('../../src/extproc/streamTable.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/extproc/streamTable.js')>();
  return { ...original, adoptStreamTables: vi.fn(original.adoptStreamTables) };
});

describe('startExtProcServer', () => {
  it('hands its bound gRPC server to adoptStreamTables (src/extproc/streamTable.ts)', async () => {
    const { logger, messages } = recordingLogger();
    // No stream opens here, so no decision is asked for.
    const server = await startExtProcServer({ engine: {} as DecisionEngine, logger, metrics: new Metrics({ processMetrics: false }), port: 0 });
    await server.close(0);

    expect(vi.mocked(adoptStreamTables)).toHaveBeenCalledTimes(1);
    expect(vi.mocked(adoptStreamTables).mock.calls[0]![0]).toBeInstanceOf(grpc.Server);
    expect(messages).not.toContain("HTTP/2 sessions keep Node's own stream map");
  });
});
