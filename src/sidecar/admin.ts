import { createServer } from 'node:http';

export interface Readiness {
  ready: boolean;
  reason?: string;
}

export interface AdminServerOptions {
  port: number;
  host?: string;
  readiness: () => Promise<Readiness>;
}

export interface AdminServer {
  port: number;
  close(): Promise<void>;
}

/** The admin port: `/healthz` (the process answers) and `/readyz` (it can cache, or why not). */
export async function startAdminServer(options: AdminServerOptions): Promise<AdminServer> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?', 1)[0];
    if (path === '/healthz') {
      response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('ok\n');
      return;
    }
    if (path === '/readyz') {
      options.readiness().then(
        (readiness) =>
          response
            .writeHead(readiness.ready ? 200 : 503, { 'content-type': 'text/plain; charset=utf-8' })
            .end(readiness.ready ? 'ready\n' : `not ready: ${readiness.reason}\n`),
        (error: unknown) =>
          response.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' }).end(`not ready: ${String(error)}\n`),
      );
      return;
    }
    response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : options.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
