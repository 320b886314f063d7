import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListenError } from '../util/index.js';
import { DemoData } from './data.js';
import { graphqlHttp } from './graphqlRuntime.js';
import { demoSchema, type DemoContext } from './schema.js';

/**
 * The bundled demo GraphQL origin: the Todo domain of `schema.ts` over GraphQL over HTTP at
 * `/graphql`, spoken by graphql-http so that it passes graphql-http's audits. Tests steer it
 * (extra headers, delays, broken answers) and read back every request that reached it.
 */

export { demoSchemaSDL } from './schema.js';

export interface DemoOriginOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Defaults to 127.0.0.1. */
  host?: string;
}

export interface RecordedRequest {
  method: string;
  /** The request target as sent, query string included (what HTTP/2 calls `:path`). */
  path: string;
  /** Lower-case names; a header sent several times has its values joined as Node joins them. */
  headers: Record<string, string>;
  body: string;
}

/** An answer sent in place of executing the operation. */
export interface ForcedResponse {
  status: number;
  headers?: Record<string, string>;
  body: string;
}

export interface OriginBehaviour {
  /** Added to every answer on `/graphql`, replacing a header of the same name; an array sends one line per value. */
  headers: Record<string, string | string[]>;
  /** How long to wait before answering; the request is recorded before the wait starts. */
  delayMs: number;
  /** When set, `/graphql` answers this and executes nothing, so the data stays as it is. */
  forcedResponse: ForcedResponse | null;
}

export interface DemoOrigin {
  /** `http://host:port/graphql` */
  url: string;
  port: number;
  /** Every request that reached the origin, on any path, in the order they finished arriving. Cleared by `reset()`. */
  requests: RecordedRequest[];
  requestCount(): number;
  /** Back to the seed data, no recorded requests and the default behaviour. */
  reset(): void;
  /** Fields given replace the current ones; the others stay. */
  setBehaviour(behaviour: Partial<OriginBehaviour>): void;
  /** Stops listening and drops open connections, in-flight requests included. Safe to call twice. */
  close(): Promise<void>;
}

export const DEMO_ORIGIN_PATH = '/graphql';

export async function startDemoOrigin(options: DemoOriginOptions = {}): Promise<DemoOrigin> {
  const host = options.host ?? '127.0.0.1';
  const data = new DemoData();
  const requests: RecordedRequest[] = [];
  let behaviour = defaultBehaviour();

  const executeGraphQL = graphqlHttp.createHandler<IncomingMessage, undefined, DemoContext>({
    schema: demoSchema,
    context: (request) => ({ data, viewer: data.userByAuthorization(request.raw.headers.authorization) }),
  });

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const path = req.url ?? '/';
    const method = req.method ?? 'GET';
    requests.push({ method, path, headers: flattenHeaders(req.headers), body });

    if (!routesToGraphQL(new URL(path, 'http://origin').pathname)) {
      send(res, 404, { 'content-type': 'text/plain; charset=utf-8' }, 'Not Found');
      return;
    }
    const { headers: extraHeaders, delayMs, forcedResponse } = behaviour;
    if (delayMs > 0) await sleep(delayMs);
    if (forcedResponse) {
      send(res, forcedResponse.status, { ...lowerCaseKeys(forcedResponse.headers ?? {}), ...lowerCaseKeys(extraHeaders) }, forcedResponse.body);
      return;
    }
    const [responseBody, init] = await executeGraphQL({
      method,
      url: path,
      headers: req.headers,
      body,
      raw: req,
      context: undefined,
    });
    send(res, init.status, { ...init.headers, ...lowerCaseKeys(extraHeaders) }, responseBody ?? '');
  }

  const server = createServer((req, res) => {
    answer(req, res).catch((error: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      send(res, 500, { 'content-type': 'text/plain; charset=utf-8' }, `demo origin failed: ${String(error)}`);
    });
  });
  await listen(server, options.port ?? 0, host);
  const { port } = server.address() as AddressInfo;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}${DEMO_ORIGIN_PATH}`,
    port,
    requests,
    requestCount: () => requests.length,
    reset() {
      data.reset();
      requests.length = 0;
      behaviour = defaultBehaviour();
    },
    setBehaviour(changes) {
      behaviour = {
        headers: changes.headers ?? behaviour.headers,
        delayMs: changes.delayMs ?? behaviour.delayMs,
        forcedResponse: changes.forcedResponse === undefined ? behaviour.forcedResponse : changes.forcedResponse,
      };
    },
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function defaultBehaviour(): OriginBehaviour {
  return { headers: {}, delayMs: 0, forcedResponse: null };
}

function listen(server: ReturnType<typeof createServer>, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const refused = (error: Error): void => reject(new ListenError('demo origin', `${host}:${port}`, error.message));
    server.once('error', refused);
    server.listen(port, host, () => {
      server.off('error', refused);
      resolve();
    });
  });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Never chunked: a fixed `content-length` lets tests check that svc-cache forwards and replays bodies byte for byte. */
function send(res: ServerResponse, status: number, headers: Record<string, string | string[]>, body: string): void {
  const bytes = Buffer.from(body, 'utf8');
  res.writeHead(status, { ...headers, 'content-length': String(bytes.byteLength) });
  res.end(bytes);
}

function flattenHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

function lowerCaseKeys<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).map(([name, value]) => [name.toLowerCase(), value]));
}

/**
 * Routed as Express routes a handler mounted with `app.use('/graphql', …)`, as Apollo Server 4
 * documents it (case-insensitive, the path and every path below it), as many origins do:
 * `/graphql/` and `/graphql/x` reach the same handler, which svc-cache must allow for (README,
 * Invalidation after mutations).
 */
function routesToGraphQL(pathname: string): boolean {
  const lower = pathname.toLowerCase();
  return lower === DEMO_ORIGIN_PATH || lower.startsWith(`${DEMO_ORIGIN_PATH}/`);
}
