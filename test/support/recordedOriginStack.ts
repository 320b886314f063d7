import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { silentLogger } from '../../src/observability/log.js';
import { startSidecar, type Sidecar } from '../../src/sidecar/sidecar.js';

/** An origin of the test's own, svc-cache configured from a file in front of it, and the gateway. */
export interface RecordedOriginStack {
  sidecar: Sidecar;
  gateway: Gateway;
  /** `METHOD url body` of each request the origin received, in order. */
  received: string[];
  /** A POST of `body` as JSON (a GET when undefined) to `/graphql` + `query` through the gateway. */
  send(body: unknown, query?: string): Promise<{ status: number; cache: string | null; body: string }>;
  close(): Promise<void>;
}

/**
 * Starts `handler` as the origin and svc-cache from the YAML lines `config` gives for its URL, with
 * `files` (name to content) written beside the config file.
 */
export async function startRecordedOriginStack(
  handler: (request: IncomingMessage, response: ServerResponse) => void,
  config: (originUrl: string) => string[],
  files: Record<string, string>,
): Promise<RecordedOriginStack> {
  const received: string[] = [];
  const origin: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => received.push(`${request.method} ${request.url} ${Buffer.concat(chunks).toString()}`));
    handler(request, response);
  });
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
  const originUrl = `http://127.0.0.1:${(origin.address() as AddressInfo).port}/graphql`;
  const directory = await mkdtemp(join(tmpdir(), 'svc-cache-recorded-origin-'));
  for (const [name, content] of Object.entries(files)) await writeFile(join(directory, name), content);
  await writeFile(join(directory, 'config.yaml'), config(originUrl).join('\n'));
  const sidecar = await startSidecar({ config: await loadConfig(join(directory, 'config.yaml'), {}), grpcPort: 0, adminPort: 0, host: '127.0.0.1', logger: silentLogger() });
  await sidecar.schemaReady;
  const gateway = await startGateway({ processor: `127.0.0.1:${sidecar.grpcPort}`, origin: originUrl, port: 0 });
  return {
    sidecar,
    gateway,
    received,
    async send(body, query = '') {
      const init: RequestInit =
        body === undefined
          ? { headers: { accept: 'application/json' } }
          : { method: 'POST', headers: { accept: 'application/json', 'content-type': 'application/json' }, body: JSON.stringify(body) };
      const response = await fetch(`${gateway.url}/graphql${query}`, init);
      return { status: response.status, cache: response.headers.get('svc-cache'), body: await response.text() };
    },
    async close() {
      await gateway.close();
      await sidecar.close(1000);
      await new Promise((resolve) => origin.close(resolve));
      await rm(directory, { recursive: true, force: true });
    },
  };
}
