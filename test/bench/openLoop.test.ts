import { createServer, type Http2Server, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runOpenLoop } from '../../bench/openLoop.js';

/** An HTTP/2 server answering each stream as a gRPC call would, or holding them all until `release`. */
async function startServer(answerBytes: number): Promise<{ server: Http2Server; port: number; hold(): void; release(): void }> {
  let held: ServerHttp2Stream[] | undefined;
  const answer = (stream: ServerHttp2Stream): void => {
    if (stream.destroyed) return;
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(Buffer.alloc(answerBytes));
  };
  const server = createServer();
  server.on('stream', (stream) => {
    stream.resume();
    stream.on('end', () => (held ? held.push(stream) : answer(stream)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    hold: () => {
      held = [];
    },
    release: () => {
      const waiting = held ?? [];
      held = undefined;
      waiting.forEach(answer);
    },
  };
}

describe('the open-loop client', () => {
  let server: Http2Server | undefined;
  afterEach(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });

  it('keeps to its schedule while the server stalls, and times each stream from its scheduled start', async () => {
    const started = await startServer(100);
    server = started.server;
    started.hold();
    setTimeout(() => started.release(), 300);
    const figures = await runOpenLoop({
      port: started.port,
      frame: Buffer.from('frame'),
      ratePerSecond: 100,
      connections: 2,
      warmupMs: 0,
      durationMs: 600,
      answered: (bytes) => bytes === 100,
      signal: new AbortController().signal,
    });
    expect(figures).toMatchObject({ ratePerSecond: 100, requests: 60, errors: 0 });
    // The first stream waited out the whole stall; a closed loop would have sent 2 streams in it, not 30.
    expect(figures.maxMs).toBeGreaterThanOrEqual(290);
    expect(figures.p99Ms).toBeGreaterThanOrEqual(250);
  });

  it('counts an answer that is not the one expected as an error', async () => {
    const started = await startServer(10);
    server = started.server;
    const figures = await runOpenLoop({
      port: started.port,
      frame: Buffer.from('frame'),
      ratePerSecond: 50,
      connections: 1,
      warmupMs: 0,
      durationMs: 200,
      answered: (bytes) => bytes > 100,
      signal: new AbortController().signal,
    });
    expect(figures).toMatchObject({ requests: 10, errors: 10, firstError: 'unexpected answer of 10 bytes' });
  });
});
