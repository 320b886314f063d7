import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/index.js';
import { silentLogger } from '../../src/observability/log.js';
import { startSidecar, type Sidecar } from '../../src/sidecar/sidecar.js';
import { makeTlsFiles, opensslMissing } from '../support/tlsFiles.js';

/**
 * `grpc.tls`: for an Envoy outside the pod, the ext_proc port speaks TLS and serves only clients
 * whose certificate the configured CA signed. Certificates are made at test time with the openssl
 * command (test/support/tlsFiles.ts); where it is missing the test is skipped and says so.
 */

if (opensslMissing) console.warn('test/ops/grpcTls.test.ts skipped: the openssl command is not installed');

const HEALTH_CHECK = '/grpc.health.v1.Health/Check';
/** grpc.health.v1.HealthCheckResponse { status: SERVING } on the wire. */
const SERVING = Buffer.from([0x08, 0x01]);

describe.skipIf(opensslMissing)('ext_proc over TLS with client certificates (grpc.tls)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cache-tls-'));
  const file = (name: string): string => join(dir, name);
  let sidecar: Sidecar;

  beforeAll(async () => {
    makeTlsFiles(dir);
    const config = configSchema.parse({
      origin: { url: 'http://127.0.0.1:9/graphql' },
      grpc: { tls: { cert: file('server.crt'), key: file('server.key'), clientCa: file('ca.crt') } },
    });
    sidecar = await startSidecar({ config, grpcPort: 0, adminPort: 0, host: '127.0.0.1', logger: silentLogger() });
  });

  afterAll(async () => {
    await sidecar?.close(0);
    rmSync(dir, { recursive: true, force: true });
  });

  const healthCheck = (credentials: grpc.ChannelCredentials): Promise<Buffer> => {
    const client = new grpc.Client(`localhost:${sidecar.grpcPort}`, credentials);
    return new Promise<Buffer>((resolve, reject) => {
      client.makeUnaryRequest(
        HEALTH_CHECK,
        (request: Buffer) => request,
        (response: Buffer) => response,
        Buffer.alloc(0),
        { deadline: Date.now() + 5_000 },
        (error, response) => {
          client.close();
          if (error) reject(error);
          else resolve(response!);
        },
      );
    });
  };

  it('serves a client presenting a certificate signed by clientCa', async () => {
    const credentials = grpc.credentials.createSsl(readFileSync(file('ca.crt')), readFileSync(file('client.key')), readFileSync(file('client.crt')));
    expect(await healthCheck(credentials)).toEqual(SERVING);
  });

  it('refuses a client without a certificate', async () => {
    await expect(healthCheck(grpc.credentials.createSsl(readFileSync(file('ca.crt'))))).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
  });

  it('refuses a client speaking clear text', async () => {
    await expect(healthCheck(grpc.credentials.createInsecure())).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
  });
});
