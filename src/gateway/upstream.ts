import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { HeaderMap } from './headerMap.js';
import { envoyReplies, type LocalReply } from './localReply.js';

/** The production cluster's connect_timeout (docs/ext-proc.md, Envoy configuration). */
const CONNECT_TIMEOUT_MS = 2_000;

export type UpstreamOutcome =
  | { kind: 'response'; response: IncomingMessage; serviceTimeMs: number }
  | { kind: 'failure'; reply: LocalReply };

/** Told when the origin exchange breaks after its response headers were passed on; Envoy then resets the client. */
export type UpstreamResetHandler = (details: string) => void;

/** The route and router filter settings the gateway plays (same names as Envoy's fields). */
export interface RouteConfig {
  /** The route's `timeout`. */
  timeoutMs: number;
  /**
   * The route's `request_headers_to_remove`: removed by the router as it forwards, so after ext_proc saw them,
   * and whether or not the processor answered (docs/ext-proc.md, Envoy configuration).
   */
  requestHeadersToRemove: string[];
  /** The router filter's `suppress_envoy_headers`: no x-envoy-upstream-service-time, no x-envoy-expected-rq-timeout-ms. */
  suppressEnvoyHeaders: boolean;
}

/** What the production route and router do (envoy/envoy.yaml): the purge token never reaches the origin. */
export const PRODUCTION_ROUTE: RouteConfig = {
  timeoutMs: 30_000,
  requestHeadersToRemove: ['svc-purge-token'],
  suppressEnvoyHeaders: true,
};

/** Envoy's router towards one origin cluster: the request path is kept, the connection pool is shared. */
export class Router {
  private readonly agent: http.Agent;

  constructor(
    private readonly origin: URL,
    private readonly route: RouteConfig,
  ) {
    const Agent = origin.protocol === 'https:' ? https.Agent : http.Agent;
    this.agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  }

  get suppressEnvoyHeaders(): boolean {
    return this.route.suppressEnvoyHeaders;
  }

  /**
   * Starts the upstream request with `headers` (pseudo-headers become the request line and Host) after the
   * router's own changes (Router::Filter::decodeHeaders, finalizeRequestHeaders).
   */
  forward(headers: HeaderMap, hasBody: boolean, onResetAfterHeaders: UpstreamResetHandler): UpstreamRequest {
    for (const name of this.route.requestHeadersToRemove) headers.remove(name);
    if (!this.route.suppressEnvoyHeaders) headers.set('x-envoy-expected-rq-timeout-ms', String(this.route.timeoutMs));
    return new UpstreamRequest(this.origin, this.agent, this.route.timeoutMs, headers, hasBody, onResetAfterHeaders);
  }

  close(): void {
    this.agent.destroy();
  }
}

export class UpstreamRequest {
  readonly request: ClientRequest;
  /** Settles at the origin's response headers, or with the local reply Envoy sends for a failure before them. */
  readonly outcome: Promise<UpstreamOutcome>;
  private settle!: (outcome: UpstreamOutcome) => void;
  private routeTimer: NodeJS.Timeout | undefined;
  private connectTimer: NodeJS.Timeout | undefined;
  private responded = false;
  private finished = false;

  constructor(
    origin: URL,
    agent: http.Agent,
    routeTimeoutMs: number,
    headers: HeaderMap,
    hasBody: boolean,
    private readonly onResetAfterHeaders: UpstreamResetHandler,
  ) {
    this.outcome = new Promise((resolve) => (this.settle = resolve));
    const startedAt = performance.now();
    const request = (origin.protocol === 'https:' ? https : http).request({
      protocol: origin.protocol,
      hostname: origin.hostname.replace(/^\[|\]$/g, ''),
      port: origin.port,
      method: headers.get(':method') ?? 'GET',
      path: headers.get(':path') ?? '/',
      headers: upstreamHeaderLines(headers, hasBody),
      setHost: false,
      agent,
    });
    this.request = request;

    request.on('socket', (socket: Socket) => {
      if (!socket.connecting) return;
      this.connectTimer = setTimeout(() => request.destroy(new ConnectTimeoutError()), CONNECT_TIMEOUT_MS);
      socket.once('connect', () => clearTimeout(this.connectTimer));
    });
    // The route timeout runs from the end of the request to the end of the response (Envoy's route `timeout`).
    request.on('finish', () => {
      if (!this.finished) this.routeTimer = setTimeout(() => this.onRouteTimeout(), routeTimeoutMs);
    });
    request.on('response', (response: IncomingMessage) => {
      this.responded = true;
      response.on('end', () => this.end());
      response.on('error', () => undefined);
      response.on('close', () => {
        if (!response.complete) this.resetAfterHeaders('upstream_reset_after_response_started{connection_termination}');
      });
      this.settle({ kind: 'response', response, serviceTimeMs: Math.round(performance.now() - startedAt) });
    });
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (this.finished) return;
      if (this.responded) {
        this.resetAfterHeaders('upstream_reset_after_response_started{connection_termination}');
        return;
      }
      this.end();
      this.settle({ kind: 'failure', reply: failureReply(error) });
    });
  }

  /** Envoy resets the upstream request when the downstream side is done with it (local reply, reset). */
  abort(): void {
    if (this.finished) return;
    this.end();
    this.request.destroy();
  }

  private onRouteTimeout(): void {
    if (this.finished) return;
    if (!this.responded) {
      this.end();
      this.request.destroy();
      this.settle({ kind: 'failure', reply: envoyReplies.upstreamRequestTimeout() });
      return;
    }
    this.request.destroy();
    this.resetAfterHeaders('upstream_response_timeout');
  }

  private resetAfterHeaders(details: string): void {
    if (this.finished) return;
    this.end();
    this.onResetAfterHeaders(details);
  }

  private end(): void {
    this.finished = true;
    clearTimeout(this.routeTimer);
    clearTimeout(this.connectTimer);
  }
}

class ConnectTimeoutError extends Error {
  readonly code = 'ECONNECTTIMEOUT';
}

/** Host first, then the held headers without pseudo-headers, and the framing of an HTTP/1 body. */
function upstreamHeaderLines(headers: HeaderMap, hasBody: boolean): string[] {
  const lines: string[] = [];
  const authority = headers.get(':authority');
  if (authority !== undefined) lines.push('host', authority);
  for (const [name, value] of headers.entries()) {
    if (!name.startsWith(':')) lines.push(name, value);
  }
  // Without content-length an HTTP/1 body is sent chunked (docs/ext-proc.md, Message order).
  if (hasBody && !headers.has('content-length') && !headers.has('transfer-encoding')) {
    lines.push('transfer-encoding', 'chunked');
  }
  return lines;
}

/** The router's 503s for a connection that failed before response headers. */
function failureReply(error: NodeJS.ErrnoException): LocalReply {
  switch (error.code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return envoyReplies.noHealthyUpstream();
    case 'ECONNECTTIMEOUT':
      return envoyReplies.upstreamResetBeforeResponse('connection timeout');
    case 'ECONNREFUSED':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EADDRNOTAVAIL':
      return envoyReplies.upstreamResetBeforeResponse(
        'remote connection failure',
        `delayed connect error: ${CONNECT_ERROR_TEXT[error.code]}`,
      );
    default:
      return envoyReplies.upstreamResetBeforeResponse('connection termination');
  }
}

/** strerror() texts, which Envoy puts in the transport failure reason. */
const CONNECT_ERROR_TEXT: Record<string, string> = {
  ECONNREFUSED: 'Connection refused',
  EHOSTUNREACH: 'No route to host',
  ENETUNREACH: 'Network is unreachable',
  EADDRNOTAVAIL: 'Cannot assign requested address',
};
