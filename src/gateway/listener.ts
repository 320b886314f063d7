import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import http2, { type Http2ServerRequest, type Http2ServerResponse, type ServerHttp2Session } from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { Duplex } from 'node:stream';
import { ListenError } from '../util/index.js';
import type { ConnectionAddresses } from './connectionManager.js';

export type DownstreamRequest = IncomingMessage | Http2ServerRequest;
export type DownstreamResponse = ServerResponse | Http2ServerResponse;
export type DownstreamHandler = (
  request: DownstreamRequest,
  response: DownstreamResponse,
  addresses: ConnectionAddresses,
) => void;

export interface DownstreamListener {
  port: number;
  close(): Promise<void>;
}

/** Envoy's HTTP connection manager refuses request headers over max_request_headers_kb (60 KiB by default). */
const ENVOY_MAX_REQUEST_HEADERS_BYTES = 60 * 1024;
/** What an HTTP/2 client with prior knowledge sends first (RFC 9113 §3.4). */
const HTTP2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

/**
 * One port for HTTP/1.1 and for HTTP/2 over cleartext with prior knowledge, as Envoy's connection manager
 * with `codec_type: AUTO` detects the codec from the first bytes (docs/ext-proc.md, HTTP/2 requests).
 */
export async function listenDownstream(host: string, port: number, handler: DownstreamHandler): Promise<DownstreamListener> {
  const http1 = http.createServer({ maxHeaderSize: ENVOY_MAX_REQUEST_HEADERS_BYTES }, (request, response) =>
    handler(request, response, addressesOf(request.socket)),
  );
  // Envoy's HTTP/1 connections idle for up to an hour; Node's default of 5 s would drop keep-alive clients early.
  http1.keepAliveTimeout = 60_000;
  http1.headersTimeout = 65_000;

  const http2Addresses = new WeakMap<ServerHttp2Session, ConnectionAddresses>();
  const http2Sessions = new Set<ServerHttp2Session>();
  let nextSessionAddresses: ConnectionAddresses | undefined;
  const h2c = http2.createServer({ maxSessionMemory: 1024, settings: { maxHeaderListSize: ENVOY_MAX_REQUEST_HEADERS_BYTES } });
  h2c.on('session', (session: ServerHttp2Session) => {
    if (nextSessionAddresses) http2Addresses.set(session, nextSessionAddresses);
    http2Sessions.add(session);
    session.on('close', () => http2Sessions.delete(session));
  });
  h2c.on('request', (request: Http2ServerRequest, response: Http2ServerResponse) => {
    handler(request, response, http2Addresses.get(request.stream.session as ServerHttp2Session) ?? { remote: '', local: '' });
  });

  // Every downstream connection, whichever codec took it: closing the gateway closes them all, as Envoy's
  // listener does on shutdown (node:http only tracks connections of servers that listen themselves).
  const sockets = new Set<net.Socket>();
  // node:http turns Nagle's algorithm off only on connections its own server accepts (`noDelay`):
  // handed over from here, a keep-alive client's next request waited for the previous answer's last
  // segment behind its delayed ACK, about 40 ms a request. Envoy sets TCP_NODELAY on its connections.
  const server = net.createServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    sniffPreface(socket, (isHttp2, firstBytes) => {
      if (isHttp2) {
        nextSessionAddresses = addressesOf(socket);
        h2c.emit('connection', replayingDuplex(socket, firstBytes));
        nextSessionAddresses = undefined;
      } else {
        socket.unshift(firstBytes);
        http1.emit('connection', socket);
        socket.resume();
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    const refused = (error: Error): void => reject(new ListenError('gateway', `${host}:${port}`, error.message));
    server.once('error', refused);
    // A deep accept queue: load tests open a thousand connections at once.
    server.listen({ port, host, backlog: 4096 }, () => {
      server.off('error', refused);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const session of http2Sessions) session.destroy();
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

function addressesOf(socket: net.Socket): ConnectionAddresses {
  return { remote: socket.remoteAddress ?? '', local: socket.localAddress ?? '' };
}

/** Reads until the first bytes tell the codec apart, then hands them over (paused) with the verdict. */
function sniffPreface(socket: net.Socket, decide: (isHttp2: boolean, firstBytes: Buffer) => void): void {
  let seen = Buffer.alloc(0);
  const onData = (chunk: Buffer): void => {
    seen = Buffer.concat([seen, chunk]);
    const compared = Math.min(seen.length, HTTP2_PREFACE.length);
    const matches = seen.subarray(0, compared).equals(HTTP2_PREFACE.subarray(0, compared));
    if (matches && seen.length < HTTP2_PREFACE.length) return;
    socket.off('data', onData);
    socket.pause();
    decide(matches, seen);
  };
  socket.on('data', onData);
}

/**
 * The socket as a stream that first yields the bytes already read: Node's HTTP/2 session reads from the
 * socket's handle, where bytes read by JavaScript would be lost.
 */
function replayingDuplex(socket: net.Socket, firstBytes: Buffer): Duplex {
  const duplex = new Duplex({
    read: () => socket.resume(),
    write: (chunk: Buffer, _encoding, callback) => socket.write(chunk, callback),
    final: (callback) => socket.end(callback),
    destroy: (error, callback) => {
      socket.destroy(error ?? undefined);
      callback(error);
    },
  });
  duplex.push(firstBytes);
  socket.on('data', (chunk: Buffer) => {
    if (!duplex.push(chunk)) socket.pause();
  });
  socket.on('end', () => duplex.push(null));
  socket.on('close', () => duplex.destroy());
  return duplex;
}
