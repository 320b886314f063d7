import { createServer, type ServerResponse } from 'node:http';
import type { AdminRoutes } from '../dashboard/index.js';
import type { Metrics } from '../observability/index.js';
import { ListenError } from '../util/index.js';

export interface Readiness {
  ready: boolean;
  reason?: string;
}

export interface AdminServerOptions {
  port: number;
  host?: string;
  readiness: () => Promise<Readiness>;
  metrics: Metrics;
  /** Further routes (the dashboard page and its API), tried before answering 404. */
  routes?: AdminRoutes;
}

export interface AdminServer {
  port: number;
  close(): Promise<void>;
}

/**
 * The admin port: `/healthz` (the process answers), `/readyz` (it can cache, or why not) and
 * `/metrics` (Prometheus text format); with the dashboard on, its page `/` and JSON API `/api/...`
 * (README, Dashboard).
 */
const PROBES: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

export async function startAdminServer(options: AdminServerOptions): Promise<AdminServer> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?', 1)[0];
    if (path !== undefined && PROBES.has(path) && request.method !== 'GET' && request.method !== 'HEAD') {
      // Read-only endpoints: a DELETE or POST that answered 200 would look as if it did something.
      response.writeHead(405, { 'content-type': 'text/plain; charset=utf-8', allow: 'GET, HEAD' }).end('method not allowed\n');
      return;
    }
    switch (path) {
      case '/healthz':
        plainText(response, 200, 'ok\n');
        return;
      case '/readyz':
        options.readiness().then(
          (readiness) =>
            plainText(response, readiness.ready ? 200 : 503, readiness.ready ? 'ready\n' : `not ready: ${readiness.reason}\n`),
          (error: unknown) => plainText(response, 503, `not ready: ${String(error)}\n`),
        );
        return;
      case '/metrics':
        options.metrics.exposition().then(
          (text) => response.writeHead(200, { 'content-type': options.metrics.contentType }).end(text),
          (error: unknown) => plainText(response, 500, `metrics unavailable: ${String(error)}\n`),
        );
        return;
      default:
        if (options.routes?.(request, response)) return;
        plainText(response, 404, 'not found\n');
    }
  });
  const host = options.host ?? '0.0.0.0';
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(new ListenError('admin', `${host}:${options.port}`, error.message)));
    server.listen(options.port, host, () => resolve());
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

function plainText(response: ServerResponse, status: number, body: string): void {
  response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(body);
}
