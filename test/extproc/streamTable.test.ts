import * as grpc from '@grpc/grpc-js';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { StreamTable, adoptStreamTable, adoptStreamTables, type StreamTableRefusal } from '../../src/extproc/streamTable.js';

// Why the table exists: src/extproc/streamTable.ts and README, Performance, Garbage collection.

describe('StreamTable', () => {
  it('answers get, size and delete as a Map does over streams that open and close in any order', () => {
    const table = new StreamTable<string>();
    const reference = new Map<number, string>();
    const random = seededRandom(17);
    let nextId = 1;
    for (let step = 0; step < 20_000; step += 1) {
      const open = [...reference.keys()];
      // Waves of opening and closing make the table grow past its first capacity and shrink back.
      const opening = Math.floor(step / 2_000) % 2 === 0 ? 0.7 : 0.3;
      if (open.length === 0 || random() < opening) {
        const id = random() < 0.9 ? nextId : 1 + 2 * Math.floor(random() * 1_000_000);
        nextId += 2;
        table.set(id, `stream ${id}`);
        reference.set(id, `stream ${id}`);
      } else {
        const id = open[Math.floor(random() * open.length)]!;
        expect(table.delete(id)).toBe(true);
        reference.delete(id);
      }
      expect(table.size).toBe(reference.size);
      const probe = open[Math.floor(random() * Math.max(1, open.length))] ?? 1;
      expect(table.get(probe)).toBe(reference.get(probe));
    }
    for (const [id, value] of reference) expect(table.get(id)).toBe(value);
    expect(table.delete(nextId)).toBe(false);
  });

  it('replaces the value of a stream identifier it already holds', () => {
    const table = new StreamTable<string>().set(3, 'first').set(3, 'second');
    expect([table.size, table.get(3)]).toEqual([1, 'second']);
  });

  it('visits in forEach what is present when it starts and not yet deleted, once each', () => {
    const table = new StreamTable<string>();
    for (let id = 1; id <= 199; id += 2) table.set(id, `stream ${id}`);
    const visited: number[] = [];
    table.forEach((_value, id) => {
      visited.push(id);
      // As Node's session does when it destroys its streams: each one deletes itself, and here
      // the next one too, and a new stream opens.
      table.delete(id);
      table.delete(id + 2);
      table.set(id + 1_001, 'opened during the visit');
    });
    expect(visited).toEqual(Array.from({ length: 50 }, (_, index) => 1 + 4 * index));
  });

  it('visits every stream once in forEach while the visits shrink the table', () => {
    const table = new StreamTable<number>();
    for (let id = 1; id < 2_000; id += 2) table.set(id, id);
    const visited: number[] = [];
    // As Node's session does when its connection goes: every stream deletes itself, and the table
    // shrinks back to its smallest size on the way.
    table.forEach((_value, id) => {
      visited.push(id);
      table.delete(id);
    });
    expect([visited.length, new Set(visited).size, table.size]).toEqual([1_000, 1_000, 0]);
  });

  it.each([0, -1, 0x8000_0000, 1.5, Number.NaN])('refuses %s, which is not an HTTP/2 stream identifier', (id) => {
    expect(() => new StreamTable<string>().set(id, 'stream')).toThrow(RangeError);
  });
});

describe('adoptStreamTable', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((close) => close()));
  });

  it('gives a Node HTTP/2 session a StreamTable its streams open, answer and close through', async () => {
    const sessions: http2.ServerHttp2Session[] = [];
    const server = http2.createServer();
    const adopted: boolean[] = [];
    server.on('session', (session) => {
      adopted.push(adoptStreamTable(session));
      sessions.push(session);
    });
    server.on('stream', (stream, headers) => {
      stream.respond({ ':status': 200 });
      stream.end(`answer to ${headers[':path']}`);
    });
    const client = await connectedClient(server, closers);

    const paths = Array.from({ length: 100 }, (_, index) => `/${index}`);
    const answers = await Promise.all(paths.map((path) => request(client, path)));

    expect(answers).toEqual(paths.map((path) => `answer to ${path}`));
    expect(adopted).toEqual([true]);
    expect(streamsOf(sessions[0]!)).toBeInstanceOf(StreamTable);
    expect((streamsOf(sessions[0]!) as StreamTable<unknown>).size).toBe(0);
  });

  it('lets the session destroy the streams it holds when the connection goes', async () => {
    const opened: number[] = [];
    const closed: number[] = [];
    const adopted: boolean[] = [];
    const server = http2.createServer();
    server.on('session', (session) => adopted.push(adoptStreamTable(session)));
    server.on('stream', (stream) => {
      opened.push(stream.id!);
      stream.on('close', () => closed.push(stream.id!));
    });
    const client = await connectedClient(server, closers);
    for (let index = 0; index < 3; index += 1) client.request({ ':path': '/never-answered' }).on('error', () => undefined);
    await waitUntil(() => opened.length === 3);
    expect(closed).toEqual([]);

    client.destroy();
    await waitUntil(() => closed.length === 3);

    expect(adopted).toEqual([true]);
    expect(closed.sort((a, b) => a - b)).toEqual([1, 3, 5]);
  });

  it('leaves alone a session whose internals are not the ones it knows', () => {
    expect(adoptStreamTable({} as http2.Http2Session)).toBe(false);
  });
});

describe('adoptStreamTables', () => {
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const close of closers.splice(0)) close();
  });

  it('gives a StreamTable to the sessions a bound grpc-js server has accepted and to those it accepts next', async () => {
    const server = new grpc.Server();
    closers.push(() => server.forceShutdown());
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
    );
    const connect = async (): Promise<void> => {
      const client = http2.connect(`http://127.0.0.1:${port}`);
      // The server's shutdown may reach the client as a GOAWAY or a reset: not what is tested.
      client.on('error', () => undefined);
      closers.push(() => client.destroy());
      await new Promise((resolve) => client.once('remoteSettings', resolve));
    };
    await connect();
    await waitUntil(() => grpcSessions(server).length === 1);

    const refusals: StreamTableRefusal[] = [];
    adoptStreamTables(server, (reason) => refusals.push(reason));
    await connect();
    await waitUntil(() => grpcSessions(server).length === 2);

    expect(refusals).toEqual([]);
    expect(grpcSessions(server).map((session) => streamsOf(session) instanceof StreamTable)).toEqual([true, true]);
  });

  it('says so when a grpc-js server has no HTTP/2 server to take sessions from', () => {
    const refusals: StreamTableRefusal[] = [];
    adoptStreamTables(new grpc.Server(), (reason) => refusals.push(reason));
    expect(refusals).toEqual(['no-http2-servers']);
  });
});

/** The sessions grpc-js keeps for each of its HTTP/2 servers (the field adoptStreamTables reads). */
function grpcSessions(server: grpc.Server): http2.Http2Session[] {
  const http2Servers = (server as unknown as { http2Servers: Map<http2.Http2Server, { sessions: Set<http2.Http2Session> }> }).http2Servers;
  return [...http2Servers.values()].flatMap((entry) => [...entry.sessions]);
}

function streamsOf(session: http2.Http2Session): unknown {
  const state = Object.getOwnPropertySymbols(session).find((symbol) => symbol.description === 'state')!;
  return (session as unknown as Record<symbol, { streams: unknown } | undefined>)[state]?.streams;
}

async function connectedClient(server: http2.Http2Server, closers: (() => Promise<void>)[]): Promise<http2.ClientHttp2Session> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  closers.push(async () => {
    client.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return client;
}

function request(client: http2.ClientHttp2Session, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stream = client.request({ ':path': path });
    let body = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => (body += chunk));
    stream.on('end', () => resolve(body));
    stream.on('error', reject);
  });
}

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 200 && !condition(); attempt += 1) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}

/** mulberry32: the same sequence every run, so a failure reproduces. */
function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}
