import { silentLogger, type Logger } from '../observability/index.js';
import { ActiveStream, type StreamContext } from './activeStream.js';
import { PRODUCTION_CONNECTION_MANAGER } from './connectionManager.js';
import { resolveFilterConfig, type FilterConfig } from './filterConfig.js';
import { listenDownstream } from './listener.js';
import { MutationChecker } from './mutation.js';
import { ProcessorClient } from './processorClient.js';
import { GatewayStatsCollector, type GatewayStats } from './stats.js';
import { PRODUCTION_ROUTE, Router } from './upstream.js';

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
  /** The route timeout; default 30 s as in the production route (docs/ext-proc.md, Envoy configuration). */
  routeTimeoutMs?: number;
  /** The connection manager's `use_remote_address`; default true, as production runs Envoy at the edge. */
  useRemoteAddress?: boolean;
  /** The connection manager's `xff_num_trusted_hops`; default 0. */
  xffNumTrustedHops?: number;
  /** The router's `suppress_envoy_headers`; default true, as in production. */
  suppressEnvoyHeaders?: boolean;
  /** The route's `request_headers_to_remove`; default `['svc-purge-token']`, as in production. */
  requestHeadersToRemove?: string[];
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

/**
 * A development front door that plays Envoy 1.36 with the production ext_proc filter over real HTTP/1.1 or
 * cleartext HTTP/2 and the real ext_proc gRPC protocol (docs/ext-proc.md). Not a production proxy.
 */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const config = resolveFilterConfig(options.filter);
  const origin = parseOrigin(options.origin);
  const logger = options.logger ?? silentLogger();
  const stats = new GatewayStatsCollector();
  const client = new ProcessorClient(options.processor);
  const router = new Router(origin, {
    timeoutMs: options.routeTimeoutMs ?? PRODUCTION_ROUTE.timeoutMs,
    requestHeadersToRemove: (options.requestHeadersToRemove ?? PRODUCTION_ROUTE.requestHeadersToRemove).map((name) =>
      name.toLowerCase(),
    ),
    suppressEnvoyHeaders: options.suppressEnvoyHeaders ?? PRODUCTION_ROUTE.suppressEnvoyHeaders,
  });
  const context: StreamContext = {
    config,
    connectionManager: {
      useRemoteAddress: options.useRemoteAddress ?? PRODUCTION_CONNECTION_MANAGER.useRemoteAddress,
      xffNumTrustedHops: options.xffNumTrustedHops ?? PRODUCTION_CONNECTION_MANAGER.xffNumTrustedHops,
    },
    client,
    checker: new MutationChecker(config.mutationRules),
    router,
    stats,
    logger,
  };

  const host = options.host ?? DEFAULT_HOST;
  const listener = await listenDownstream(host, options.port ?? DEFAULT_PORT, (request, response, addresses) => {
    new ActiveStream(context, request, response, addresses).start();
  });
  const port = listener.port;
  logger.info({ port, processor: options.processor, origin: origin.origin }, 'gateway listening');

  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    stats,
    close: async () => {
      await listener.close();
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
