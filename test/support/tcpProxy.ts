import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';

/**
 * A TCP proxy on loopback in front of a real server, so that a test can hold back what the server
 * sends on one connection (a reply that arrives late) while every other connection flows, and tell
 * the server's view of its connections (`CLIENT LIST` addr) from the client's.
 */
export interface TcpProxy {
  port: number;
  /** The connections made through it, in order. */
  connections(): ProxiedConnection[];
  close(): Promise<void>;
}

export interface ProxiedConnection {
  /** The proxy's side of the connection to the server, as the server lists it (`127.0.0.1:port`). */
  readonly upstreamAddress: string;
  /** Keeps what the server sends from the client until `release()`. */
  hold(): void;
  /** Delivers what was held, in order, and lets the rest through. */
  release(): void;
  /** Bytes held back so far. */
  heldBytes(): number;
  /** What the client has sent the server on this connection so far, one byte a character. */
  sentText(): string;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const connections: ProxiedConnection[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const sent: Buffer[] = [];
    client.on('data', (chunk: Buffer) => sent.push(chunk));
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.once('connect', () => connections.push(connectionThrough(client, upstream, sent)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => [...connections],
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function connectionThrough(client: Socket, upstream: Socket, sent: readonly Buffer[]): ProxiedConnection {
  let held: Buffer[] | undefined;
  upstream.on('data', (chunk: Buffer) => {
    if (held) held.push(chunk);
    else client.write(chunk);
  });
  return {
    upstreamAddress: `127.0.0.1:${upstream.localPort}`,
    hold: () => {
      held ??= [];
    },
    release: () => {
      const chunks = held ?? [];
      held = undefined;
      for (const chunk of chunks) client.write(chunk);
    },
    heldBytes: () => (held ?? []).reduce((sum, chunk) => sum + chunk.length, 0),
    sentText: () => Buffer.concat(sent).toString('latin1'),
  };
}
