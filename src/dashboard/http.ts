import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { Config } from '../config/index.js';
import { isPurgeToken } from '../purge/index.js';
import type { Dashboard } from './dashboard.js';
import { pageAsset } from './page.js';
import { TIMELINE_SECONDS } from './timeline.js';

/** What a purge made from the page returns: the purge API's own answer, passed on as it is. */
export interface PurgeAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer | string;
}

/** A request the inspector explains: as a client would send it. */
export interface InspectInput {
  query: string;
  variables?: Record<string, unknown>;
  operationName?: string;
  headers?: Record<string, string>;
}

export interface DashboardActions {
  /** Runs a purge-API request body with the page's token header through the purge API's own code. */
  purge(requestBody: Buffer, headers: Record<string, string>): Promise<PurgeAnswer>;
  /** What svc-cache would do with a request (the same explanation as `svc-debug`). */
  inspect(input: InspectInput): Promise<unknown>;
}

export interface DashboardRoutesOptions {
  dashboard: Dashboard;
  actions: DashboardActions;
  config: () => Config;
  /** A token the page's API refused (POST /api/purge, /api/inspect, /api/token): logged and counted as the purge API's refusals are. */
  onRefusedToken?: (route: string) => void;
}

/** A request handler for the admin port: true when it answered the request. */
export type AdminRoutes = (request: IncomingMessage, response: ServerResponse) => boolean;

/**
 * The page and its JSON API (README, Dashboard). GET routes are read-only and need no token;
 * POST /api/purge and /api/inspect need a purge token in the configured purge header; POST
 * /api/token says whether the one presented is accepted (so the page can check it without a 401).
 */
export function dashboardRoutes(options: DashboardRoutesOptions): AdminRoutes {
  const { dashboard } = options;
  return (request, response) => {
    const url = new URL(request.url ?? '/', 'http://admin');
    // HEAD is GET without the body, which Node's server leaves out itself (RFC 9110 section 9.3.2).
    const method = request.method === 'HEAD' ? 'GET' : (request.method ?? 'GET');
    const route = `${method} ${url.pathname}`;
    if (!options.config().dashboard.enabled) return false;
    const asset = method === 'GET' ? pageAsset(url.pathname) : undefined;
    if (!asset && !url.pathname.startsWith('/api/')) return false;
    for (const [name, value] of SECURITY_HEADERS) response.setHeader(name, value);
    if (!isAllowedHost(request.headers.host, options.config().dashboard.allowedHosts)) {
      request.resume();
      json(response, 421, { error: 'host-not-allowed', message: 'this Host is not one of the admin port\'s: add it to dashboard.allowedHosts' });
      return true;
    }
    if (asset) {
      response.writeHead(200, { 'content-type': asset.contentType, 'cache-control': 'no-cache' }).end(asset.body);
      return true;
    }
    switch (route) {
      case 'GET /api/summary':
        answerWith(response, dashboard.summary());
        return true;
      case 'GET /api/timeseries':
        json(response, 200, dashboard.timeseries(boundedInteger(url.searchParams.get('seconds'), TIMELINE_SECONDS)));
        return true;
      case 'GET /api/operations':
        json(response, 200, { operations: dashboard.topOperations(boundedInteger(url.searchParams.get('limit'), 100)) });
        return true;
      case 'GET /api/purges':
        json(response, 200, { changes: dashboard.recentChanges() });
        return true;
      case 'GET /api/config':
        json(response, 200, dashboard.configView());
        return true;
      case 'POST /api/purge':
        withTokenAndBody(request, response, options, route, (body, token) =>
          options.actions.purge(body, { [options.config().purge.header]: token }).then((answer) => {
            response.writeHead(answer.status, answer.headers).end(answer.body);
          }),
        );
        return true;
      case 'POST /api/token': {
        const accepted = hasPurgeToken(request, options.config());
        if (!accepted) options.onRefusedToken?.(route);
        json(response, 200, { accepted });
        request.resume();
        return true;
      }
      case 'POST /api/inspect':
        withTokenAndBody(request, response, options, route, async (body) => {
          const input = inspectInput(body);
          if (typeof input === 'string') return json(response, 400, { error: 'invalid-input', message: input });
          json(response, 200, await options.actions.inspect(input));
        });
        return true;
      default:
        if (url.pathname.startsWith('/api/')) {
          json(response, 404, { error: 'not-found' });
          return true;
        }
        return false;
    }
  };
}

/**
 * Reads the body once the token is known good, so an unauthenticated client cannot make the admin
 * port buffer anything; bodies are bounded by `limits.maxRequestBodyBytes`.
 */
function withTokenAndBody(
  request: IncomingMessage,
  response: ServerResponse,
  options: DashboardRoutesOptions,
  route: string,
  handle: (body: Buffer, token: string) => Promise<void>,
): void {
  const config = options.config();
  const token = presentedToken(request, config);
  if (!isPurgeToken(token, config.purge.tokens)) {
    options.onRefusedToken?.(route);
    request.resume();
    json(response, 401, { error: 'unauthorized', message: `a purge token is required in the ${config.purge.header} header` });
    return;
  }
  let chunks: Buffer[] = [];
  let size = 0;
  request.on('data', (chunk: Buffer) => {
    size += chunk.length;
    // Past the limit the rest is read and dropped, so the answer reaches the client.
    if (size > config.limits.maxRequestBodyBytes) chunks = [];
    else chunks.push(chunk);
  });
  request.on('end', () => {
    if (size > config.limits.maxRequestBodyBytes) return json(response, 413, { error: 'body-too-large' });
    handle(Buffer.concat(chunks), token!).catch((error: unknown) => {
      if (!response.headersSent) json(response, 500, { error: 'failed', message: error instanceof Error ? error.message : String(error) });
    });
  });
}

function presentedToken(request: IncomingMessage, config: Config): string | undefined {
  const presented = request.headers[config.purge.header.toLowerCase()];
  return typeof presented === 'string' ? presented : undefined;
}

/** Whether the request carries a configured purge token, compared in constant time. */
function hasPurgeToken(request: IncomingMessage, config: Config): boolean {
  return isPurgeToken(presentedToken(request, config), config.purge.tokens);
}

function inspectInput(body: Buffer): InspectInput | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return 'expected a JSON object';
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return 'expected a JSON object';
  const { query, variables, operationName, headers } = parsed as Record<string, unknown>;
  if (typeof query !== 'string' || query === '') return 'query: expected a non-empty string';
  if (variables !== undefined && (typeof variables !== 'object' || variables === null || Array.isArray(variables))) {
    return 'variables: expected an object';
  }
  if (operationName !== undefined && typeof operationName !== 'string') return 'operationName: expected a string';
  if (headers !== undefined && !isStringRecord(headers)) return 'headers: expected an object of strings';
  return {
    query,
    ...(variables === undefined ? {} : { variables: variables as Record<string, unknown> }),
    ...(operationName === undefined ? {} : { operationName }),
    ...(headers === undefined ? {} : { headers }),
  };
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((item) => typeof item === 'string')
  );
}

function boundedInteger(text: string | null, max: number): number {
  const value = Number(text);
  return Number.isInteger(value) && value > 0 ? Math.min(value, max) : max;
}

function answerWith(response: ServerResponse, value: Promise<unknown>): void {
  value.then(
    (body) => json(response, 200, body),
    (error: unknown) => json(response, 500, { error: 'failed', message: error instanceof Error ? error.message : String(error) }),
  );
}

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }).end(JSON.stringify(body));
}

/**
 * On every page and API answer: the page is never framed (clickjacking), runs only its own scripts
 * and styles, and sends no referrer; answers are never sniffed into another type.
 */
const SECURITY_HEADERS: ReadonlyArray<[string, string]> = [
  // `img-src data:` for the page's empty icon (`<link rel="icon" href="data:,">`), which spares a request.
  ['content-security-policy', "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"],
  ['x-frame-options', 'DENY'],
  ['x-content-type-options', 'nosniff'],
  ['referrer-policy', 'no-referrer'],
];

/**
 * Whether the page and its API answer a request for this `Host`: a page of another site that a DNS
 * name it controls points at the admin port (DNS rebinding) would read it as its own origin. An IP
 * address, `localhost`, a name of one label and a Kubernetes Service name (`*.svc`,
 * `*.svc.cluster.local`) are the admin port's own; any other name only when configured. `/metrics`
 * and the health checks do not ask.
 */
export function isAllowedHost(host: string | undefined, allowedHosts: readonly string[]): boolean {
  if (host === undefined) return true;
  const name = hostName(host).toLowerCase();
  if (name === 'localhost' || isIP(name) !== 0 || !name.includes('.')) return true;
  if (name.endsWith('.svc') || name.endsWith('.svc.cluster.local')) return true;
  return allowedHosts.some((allowed) => allowed.toLowerCase() === name);
}

/** The name of a Host header: without its port, an IPv6 literal without its brackets, a fully qualified name without its final dot. */
function hostName(host: string): string {
  if (host.startsWith('[')) return host.slice(1, host.indexOf(']') === -1 ? undefined : host.indexOf(']'));
  const colon = host.lastIndexOf(':');
  const name = colon === -1 ? host : host.slice(0, colon);
  return name.endsWith('.') ? name.slice(0, -1) : name;
}
