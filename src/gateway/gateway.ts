import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { silentLogger, type Logger } from '../observability/log.js';
import { ActiveStream, type StreamContext } from './activeStream.js';
import { resolveFilterConfig, type FilterConfig } from './filterConfig.js';
import { MutationChecker } from './mutation.js';
import { ProcessorClient } from './processorClient.js';
import { GatewayStatsCollector, type GatewayStats } from './stats.js';
import { Router } from './upstream.js';

export interface GatewayOptions {
  /** "host:port" of the ext_proc server (plaintext h2c gRPC). */
  processor: string;
  /** Requests go to its scheme, host and port with the client's path unchanged, as an Envoy route to a cluster. */
  origin: string;
  /** Default 8080; 0 picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Envoy ext_proc filter settings; anything left out is what production runs (see `productionFilterConfig`). */
  filter?: Partial<FilterConfig>;
  /** The route timeout; default 30 s as in the production route (ext_proc.md §7.1). */
  routeTimeoutMs?: number;
  /** Default: silent. */
  logger?: Logger;
}

export interface Gateway {
  /** http://host:port */
  url: string;
  port: number;
  stats: GatewayStats;
  close(): Promise<void>;
}

const DEFAULT_PORT = 8080;
const DEFAULT_HOST = '127.0.0.1';
const PRODUCTION_ROUTE_TIMEOUT_MS = 30_000;

/**
 * A development front door that plays Envoy 1.36 with the production ext_proc filter over real HTTP/1.1
 * and the real ext_proc gRPC protocol (ext_proc.md §10). Not a production proxy.
 */
const ENVOY_MAX_REQUEST_HEADERS_BYTES = 60 * 1024;

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const config = resolveFilterConfig(options.filter);
  const origin = parseOrigin(options.origin);
  const logger = options.logger ?? silentLogger();
  const stats = new GatewayStatsCollector();
  const client = new ProcessorClient(options.processor);
  const router = new Router(origin, options.routeTimeoutMs ?? PRODUCTION_ROUTE_TIMEOUT_MS);
  const context: StreamContext = {
    config,
    client,
    checker: new MutationChecker(config.mutationRules),
    router,
    stats,
    logger,
  };

  // Envoy's HTTP connection manager refuses request headers over max_request_headers_kb (60 KiB by
  // default) with 431 before any filter runs; Node's own default is 16 KiB.
  const server = http.createServer({ maxHeaderSize: ENVOY_MAX_REQUEST_HEADERS_BYTES }, (request, response) => {
    new ActiveStream(context, request, response).start();
  });
  // Envoy's HTTP/1 connections idle for up to an hour; Node's default of 5 s would drop keep-alive clients early.
  server.keepAliveTimeout = 60_000;
  server.headersTimeout = 65_000;

  const host = options.host ?? DEFAULT_HOST;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // A deep accept queue: load tests open a thousand connections at once.
    server.listen({ port: options.port ?? DEFAULT_PORT, host, backlog: 4096 }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ port, processor: options.processor, origin: origin.origin }, 'gateway listening');

  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    stats,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      router.close();
      client.close();
    },
  };
}

function parseOrigin(origin: string): URL {
  const url = new URL(origin);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`origin must be an http:// or https:// URL, got "${origin}"`);
  }
  return url;
}
