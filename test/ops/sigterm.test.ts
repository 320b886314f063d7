import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProcessingRequest } from '../../src/extproc/messages.js';
import {
  connectExtProc,
  envoyPostHeaders,
  headerMap,
  ORIGIN_BODY,
  QUERY_BODY,
  setHeaders,
  type ExtProcTestClient,
} from '../support/extprocClient.js';
import { demoSchemaSDL } from '../support/origin.js';

/**
 * `svc-cache serve` as Kubernetes runs it, in a process of its own, sent SIGTERM while Envoy still
 * has a request in flight through it: the request is answered to the end and the process exits 0.
 * Run from source with tsx, so the test does not depend on an earlier build.
 */

const ROOT = join(import.meta.dirname, '../..');
const PURGE_TOKEN = 'sigterm-test-purge-token';
const POST_HEADERS = envoyPostHeaders();

interface ServeProcess {
  child: ChildProcess;
  grpcPort: number;
  adminPort: number;
  /** Every JSON line the process printed so far. */
  lines: Array<Record<string, unknown>>;
  output: () => string;
  waitForLine(message: string): Promise<Record<string, unknown>>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

async function startServe(configPath: string, onLine?: (line: Record<string, unknown>, child: ChildProcess) => void): Promise<ServeProcess> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli.ts', 'serve', '--config', configPath, '--grpc-port', '0', '--admin-port', '0'],
    { cwd: ROOT, env: { ...process.env, SVC_PURGE_TOKEN: PURGE_TOKEN }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let text = '';
  let pending = '';
  let hasExited = false;
  const lines: Array<Record<string, unknown>> = [];
  // Waiters are settled by the line or the exit they wait for, never by polling.
  const waiters = new Set<{ message: string; resolve: (line: Record<string, unknown>) => void; reject: (error: Error) => void }>();
  const onChunk = (chunk: Buffer): void => {
    text += chunk.toString('utf8');
    pending += chunk.toString('utf8');
    const complete = pending.split('\n');
    pending = complete.pop()!;
    for (const raw of complete) {
      if (!raw.startsWith('{')) continue;
      const line = JSON.parse(raw) as Record<string, unknown>;
      lines.push(line);
      onLine?.(line, child);
      for (const waiter of waiters) {
        if (line.msg !== waiter.message) continue;
        waiters.delete(waiter);
        waiter.resolve(line);
      }
    }
  };
  child.stdout!.on('data', onChunk);
  child.stderr!.on('data', onChunk);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      hasExited = true;
      for (const waiter of waiters) waiter.reject(new Error(`"${waiter.message}" was not logged before the exit (${code ?? signal}); output:\n${text}`));
      waiters.clear();
      resolve({ code, signal });
    }),
  );
  const waitForLine = (message: string): Promise<Record<string, unknown>> => {
    const line = lines.find((each) => each.msg === message);
    if (line) return Promise.resolve(line);
    if (hasExited) return Promise.reject(new Error(`"${message}" was not logged; output:\n${text}`));
    return new Promise((resolve, reject) => waiters.add({ message, resolve, reject }));
  };
  const serving = await waitForLine('svc-cache serving');
  return {
    child,
    grpcPort: serving.grpcPort as number,
    adminPort: serving.adminPort as number,
    lines,
    output: () => text,
    waitForLine,
    exited,
  };
}

describe('svc-cache serve on SIGTERM', () => {
  let directory: string;
  let configPath: string;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'svc-cache-sigterm-'));
    await writeFile(join(directory, 'schema.graphql'), demoSchemaSDL);
    configPath = join(directory, 'config.yaml');
    await writeFile(
      configPath,
      [
        'origin: { url: "http://127.0.0.1:9/graphql" }',
        `schema: { file: "${join(directory, 'schema.graphql')}" }`,
        'rules: [{ types: [Query], maxAge: 60 }]',
        'purge: { tokens: ["${SVC_PURGE_TOKEN}"] }',
        'logging: { level: info }',
        '',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('answers the request in flight to its end, then exits 0', async () => {
    const serve = await startServe(configPath);
    let client: ExtProcTestClient | undefined;
    try {
      client = connectExtProc(serve.grpcPort);
      const inFlight = client.open();
      expect((await inFlight.exchange(POST_HEADERS)).response).toBe('request_headers');

      serve.child.kill('SIGTERM');
      await serve.waitForLine('ext_proc server draining');
      const readiness = await fetch(`http://127.0.0.1:${serve.adminPort}/readyz`);
      expect(readiness.status).toBe(503);
      expect(await readiness.text()).toBe('not ready: shutting down\n');

      expect((await inFlight.exchange({ request_body: { body: QUERY_BODY, end_of_stream: true } })).response).toBe('request_body');
      const responseHeaders: ProcessingRequest = {
        response_headers: {
          headers: headerMap({ ':status': '200', 'content-type': 'application/json', 'content-length': String(ORIGIN_BODY.length) }),
          end_of_stream: false,
        },
      };
      expect((await inFlight.exchange(responseHeaders)).response).toBe('response_headers');
      const last = await inFlight.exchange({ response_body: { body: ORIGIN_BODY, end_of_stream: true } });
      expect(setHeaders(last.response_body?.response?.header_mutation)).toEqual({ 'svc-cache': 'MISS' });
      inFlight.halfClose();
      expect((await inFlight.status).code).toBe(grpc.status.OK);

      expect(await serve.exited).toEqual({ code: 0, signal: null });
      expect(serve.lines.map((line) => line.msg)).toContain('shut down cleanly');
      expect(serve.output()).not.toContain(PURGE_TOKEN);
    } finally {
      client?.close();
      serve.child.kill('SIGKILL');
    }
  });

  it('shuts down cleanly on a SIGTERM sent the moment it logs that it serves', async () => {
    const serve = await startServe(configPath, (line, child) => {
      if (line.msg === 'svc-cache serving') child.kill('SIGTERM');
    });
    try {
      expect(await serve.exited).toEqual({ code: 0, signal: null });
      expect(serve.lines.map((line) => line.msg)).toContain('shut down cleanly');
    } finally {
      serve.child.kill('SIGKILL');
    }
  });

  it('exits 0 at once when nothing is in flight', async () => {
    const serve = await startServe(configPath);
    try {
      const started = Date.now();
      serve.child.kill('SIGTERM');
      expect(await serve.exited).toEqual({ code: 0, signal: null });
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      serve.child.kill('SIGKILL');
    }
  });
});
