import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildSchema, execute, GraphQLError, parse, print, type DocumentNode, type ExecutionResult } from 'graphql';
import { isLosslessNumber, parse as losslessParse, stringify as losslessStringify } from 'lossless-json';
import Negotiator from 'negotiator';

/**
 * The "echo" origin of issue 12's property test: its answer is a deterministic function of everything
 * that reaches it and that a GraphQL answer may depend on, plus a version its mutation bumps. A cache
 * that serves one request's answer to another the origin tells apart is caught by comparing the HIT
 * with `echoAnswer` for the request at hand: no model of the data is needed.
 *
 * What the answer depends on, and how the origin reads it:
 * - host (`Host` as sent: an origin may echo its spelling, as Yoga's `request.url` does) and path;
 * - the GraphQL parameters as lenient servers read them (graphql-ruby, PHP, express-graphql): the
 *   last of a repeated URL parameter, URL parameters before the body's in a POST; the document
 *   (printed, so only its meaning counts), operationName, variables with each number's literal text
 *   (an arbitrary-precision origin tells 1 from 1.0), extensions other than `persistedQuery`;
 * - a URL parameter of its own, `tenant` (the last one given), and the forwarding headers
 *   `X-Forwarded-Host`, `X-Forwarded-Prefix` and `Forwarded` (its `proto=` and `host=`), as an origin
 *   that trusts its proxy reads them;
 * - the bytes of a body that is not UTF-8;
 * - `viewer` (scope AUTHENTICATED) reads authorization, `session` (scope SESSION) the `session`
 *   cookie, and `echo` (PUBLIC) no credentials: a PUBLIC answer is the same for everyone, and a query
 *   mixing scopes is keyed by the narrowest, which reads no more than its own header;
 * - when the variable `echoResponse` says `reads=cookie|x-user`, every field also reads those
 *   headers and the answer names them in `Vary`, as an honest origin does.
 * A GET and a POST with the same parameters are the same GraphQL request, so the method is not read.
 *
 * `echoResponse` (`;`-separated) also asks for response headers, from the variables, which the cache
 * keys (a request header outside the key would make two requests the cache may not tell apart get
 * different answers): `cc=<cache-control>`,
 * `expires=0|past|future`, `pragma`, `set-cookie`, `vary=<extra names, e.g. accept or *>`,
 * `stream=sse|multipart` (a stream to a client that names its type, with `Vary: accept`). An answer a shared cache must not reuse (RFC 9111: no-store, no-cache,
 * private, max-age=0, expired, Pragma without Cache-Control; Set-Cookie, `Vary: *`, a streamed
 * content type) carries a number new on every call, as a per-request answer would: a HIT of it is
 * never what the origin answers now.
 *
 * `/echo` is not GraphQL: it reflects its `msg` parameter and body in a GraphQL-shaped answer, as the
 * non-GraphQL endpoint of issue 12 ("the key ignores the path") does.
 */

export const ECHO_SCHEMA_SDL = `type Echo {
  id: ID!
  text: String!
}

"A custom scalar: its value reaches the resolver as sent, members in their order."
scalar JSON

type Query {
  echo(n: Float, s: String, j: JSON): Echo
  viewer: Echo
  session: Echo
}

type Mutation {
  bump: Echo!
}
`;

/** Every Echo has this id, so a mutation returning one invalidates every cached Echo (mutationPolicy Entity). */
export const ECHO_ID = 'echo';
export const ECHO_GRAPHQL_PATHS = ['/graphql', '/t/acme/graphql', '/t/globex/graphql'] as const;
export const REFLECTING_PATH = '/echo';
/** The variable that asks for response headers; operations need not declare it (graphql-js ignores it). */
export const RESPONSE_VARIABLE = 'echoResponse';

/** A request as it reaches the origin. */
export interface EchoRequest {
  method: string;
  /** Path and query string, as sent. */
  target: string;
  /** Lower-case names; repeated lines joined with ", " as Node joins them. */
  headers: Record<string, string>;
  body: Buffer;
}

export interface EchoResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** False when a shared cache must not serve it again: the body then holds a number new on every call. */
  reusable: boolean;
}

export interface EchoOrigin {
  /** http://127.0.0.1:PORT/graphql, where svc-cache introspects the schema. */
  url: string;
  /** Bumped by each executed `bump`. */
  readonly version: number;
  /** How many requests reached the origin since the last reset. */
  readonly requestCount: number;
  /** Version 0 and no requests counted. */
  reset(): void;
  close(): Promise<void>;
}

const schema = buildSchema(ECHO_SCHEMA_SDL);

/** What the origin answers `request` at `version`; `nonce` fills the number of a non-reusable answer. */
export function echoAnswer(request: EchoRequest, version: number, nonce: number): EchoResponse & { bumps: number } {
  const url = new URL(request.target, 'http://origin');
  if (url.pathname === REFLECTING_PATH) {
    const text = stable({ path: url.pathname, msg: url.searchParams.getAll('msg').at(-1) ?? null, body: bodyText(request.body) });
    return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data: { echo: { id: ECHO_ID, text } } }), reusable: true, bumps: 0 };
  }
  if (!(ECHO_GRAPHQL_PATHS as readonly string[]).includes(url.pathname)) {
    return { status: 404, headers: { 'content-type': 'text/plain' }, body: 'Not Found', reusable: false, bumps: 0 };
  }
  const operations = graphQLOperations(request, url);
  if (operations === undefined) return badRequest('Missing or unreadable GraphQL parameters');
  const batch = request.method === 'POST' && isBatch(request.body);
  if (!batch && operations[0]?.query === undefined) return badRequest('Missing query');
  const directives = responseDirectives(operations[0]?.variables);
  const mediaType = negotiate(request.headers.accept, directives.stream);
  if (mediaType === undefined) return { ...badRequest('Not Acceptable'), status: 406 };
  const reusable = isReusable(directives) && (mediaType === 'application/json' || mediaType === 'application/graphql-response+json');
  const volatile = reusable ? {} : { nonce };
  let bumps = 0;
  const results = operations.map((operation) => {
    const result = executeOperation(operation, { request, url, directives, version: version + bumps, volatile });
    bumps += result.bumps;
    return result.result;
  });
  const json = JSON.stringify(batch ? results : results[0]);
  return { status: 200, headers: { ...responseHeaders(directives), 'content-type': mediaType }, body: frame(json, mediaType), reusable, bumps };
}

export async function startEchoOrigin(): Promise<EchoOrigin> {
  let version = 0;
  let nonce = 0;
  let requestCount = 0;
  const server = createServer((req, res) => {
    readRequest(req)
      .then((request) => {
        requestCount += 1;
        const answer = echoAnswer(request, version, ++nonce);
        version += answer.bumps;
        send(res, answer);
      })
      .catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/graphql`,
    get version() {
      return version;
    },
    get requestCount() {
      return requestCount;
    },
    reset() {
      version = 0;
      requestCount = 0;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

interface Directives {
  reads: string[];
  vary: string[];
  cacheControl: string | undefined;
  expires: 'past' | 'future' | '0' | undefined;
  pragma: boolean;
  setCookie: boolean;
  stream: 'sse' | 'multipart' | undefined;
}

/** The directives ride in the variables, which the cache keys, so that no header outside the key changes the answer. */
function responseDirectives(variables: unknown): Directives {
  const directives: Directives = { reads: [], vary: [], cacheControl: undefined, expires: undefined, pragma: false, setCookie: false, stream: undefined };
  const header = typeof variables === 'object' && variables !== null ? (variables as Record<string, unknown>)[RESPONSE_VARIABLE] : undefined;
  if (typeof header !== 'string') return directives;
  for (const part of header.split(';')) {
    const [name, ...rest] = part.split('=');
    const value = rest.join('=').trim();
    switch (name?.trim()) {
      case 'reads':
        directives.reads = value.split('|').filter(Boolean);
        break;
      case 'vary':
        directives.vary = value.split('|').filter(Boolean);
        break;
      case 'cc':
        directives.cacheControl = value;
        break;
      case 'expires':
        directives.expires = value as Directives['expires'];
        break;
      case 'pragma':
        directives.pragma = true;
        break;
      case 'set-cookie':
        directives.setCookie = true;
        break;
      case 'stream':
        directives.stream = value as Directives['stream'];
        break;
    }
  }
  return directives;
}

/** RFC 9111, sections 3 and 4.2, for a shared cache that does not revalidate. */
function isReusable(directives: Directives): boolean {
  if (directives.setCookie || directives.vary.includes('*')) return false;
  if (directives.cacheControl !== undefined) {
    const parts = new Map(
      directives.cacheControl.split(',').map((part) => {
        const [name, value] = part.split('=');
        return [name!.trim().toLowerCase(), value?.trim()] as const;
      }),
    );
    if (parts.has('no-store') || parts.has('no-cache') || parts.has('private')) return false;
    const lifetime = parts.get('s-maxage') ?? parts.get('max-age');
    if (lifetime !== undefined) return Number(lifetime) > 0;
  } else if (directives.pragma) {
    return false;
  }
  return directives.expires === undefined || directives.expires === 'future';
}

function responseHeaders(directives: Directives): Record<string, string> {
  const headers: Record<string, string> = {};
  // Asked to stream, the answer's type depends on more of Accept than which JSON type: said so.
  const vary = [...directives.reads, ...directives.vary, ...(directives.stream === undefined ? [] : ['accept'])];
  if (vary.length > 0) headers.vary = vary.join(', ');
  if (directives.cacheControl !== undefined) headers['cache-control'] = directives.cacheControl;
  if (directives.expires === '0') headers.expires = '0';
  if (directives.expires === 'past') headers.expires = 'Thu, 01 Jan 1970 00:00:00 GMT';
  if (directives.expires === 'future') headers.expires = new Date(Date.now() + 3_600_000).toUTCString();
  if (directives.pragma) headers.pragma = 'no-cache';
  if (directives.setCookie) headers['set-cookie'] = 'sid=fresh; Path=/; HttpOnly';
  return headers;
}

interface Operation {
  query: string | undefined;
  operationName: string | undefined;
  /** Lossless: numbers keep their literal text. */
  variables: unknown;
  extensions: unknown;
}

/** One operation, or the operations of a batch (a JSON array body); undefined when unreadable. */
function graphQLOperations(request: EchoRequest, url: URL): Operation[] | undefined {
  const fromUrl = (name: string) => url.searchParams.getAll(name).at(-1);
  const parsedUrl = {
    query: fromUrl('query'),
    operationName: fromUrl('operationName'),
    variables: parseLossless(fromUrl('variables')),
    extensions: parseLossless(fromUrl('extensions')),
  };
  if (request.method !== 'POST') return [parsedUrl];
  const body = parseLossless(bodyText(request.body)) as unknown;
  const members = Array.isArray(body) ? body : [body];
  if (members.some((member) => typeof member !== 'object' || member === null)) return undefined;
  return members.map((member: Record<string, unknown>) => ({
    query: parsedUrl.query ?? (typeof member.query === 'string' ? member.query : undefined),
    operationName: parsedUrl.operationName ?? (typeof member.operationName === 'string' ? member.operationName : undefined),
    variables: parsedUrl.variables ?? member.variables,
    extensions: parsedUrl.extensions ?? member.extensions,
  }));
}

function isBatch(body: Buffer): boolean {
  return body.toString('utf8').trimStart().startsWith('[');
}

interface Execution {
  request: EchoRequest;
  url: URL;
  directives: Directives;
  version: number;
  volatile: object;
}

function executeOperation(operation: Operation, execution: Execution): { result: ExecutionResult; bumps: number } {
  const document = operation.query === undefined ? undefined : parseOrUndefined(operation.query);
  if (document === undefined) return { result: { errors: [new GraphQLError('Missing or invalid query')] }, bumps: 0 };
  const description = describe(operation, document, execution);
  const { headers } = execution.request;
  let bumps = 0;
  const credential = (field: string) => {
    switch (field) {
      case 'echo':
        return {};
      case 'viewer':
        return { authorization: headers.authorization ?? null };
      default:
        return { session: sessionCookie(headers.cookie) };
    }
  };
  const echo = (field: string) => ({ id: ECHO_ID, text: stable({ field, ...description, ...credential(field) }) });
  const rootValue = {
    echo: () => echo('echo'),
    viewer: () => echo('viewer'),
    session: () => echo('session'),
    bump: () => {
      bumps += 1;
      return { id: ECHO_ID, text: `version ${execution.version + bumps}` };
    },
  };
  const result = execute({
    schema,
    document,
    rootValue,
    variableValues: plainVariables(operation.variables),
    operationName: operation.operationName,
  }) as ExecutionResult;
  return { result: JSON.parse(JSON.stringify(result)) as ExecutionResult, bumps };
}

function describe(operation: Operation, document: DocumentNode, execution: Execution): Record<string, unknown> {
  const { request, url, directives } = execution;
  const extensions = typeof operation.extensions === 'object' && operation.extensions !== null ? { ...(operation.extensions as Record<string, unknown>) } : {};
  delete extensions.persistedQuery;
  const reads = Object.fromEntries(directives.reads.map((name) => [name, request.headers[name] ?? null]));
  return {
    host: request.headers.host ?? null,
    path: url.pathname,
    query: print(document),
    operationName: operation.operationName ?? null,
    variables: operation.variables === undefined || operation.variables === null ? null : losslessStringify(operation.variables),
    ...(Object.keys(extensions).length > 0 ? { extensions: losslessStringify(extensions) } : {}),
    ...(url.searchParams.has('tenant') ? { tenant: url.searchParams.getAll('tenant').at(-1) } : {}),
    ...forwardingRead(request),
    ...(isUtf8(request.body) ? {} : { bodyBase64: request.body.toString('base64') }),
    ...(directives.reads.length > 0 ? { reads } : {}),
    version: execution.version,
    ...execution.volatile,
  };
}

function forwardingRead(request: EchoRequest): Record<string, string> {
  const read: Record<string, string> = {};
  for (const name of ['x-forwarded-host', 'x-forwarded-prefix']) {
    const value = request.headers[name];
    if (value !== undefined) read[name] = value;
  }
  for (const pair of (request.headers.forwarded ?? '').split(/[,;]/)) {
    const [name, value] = pair.trim().split('=');
    if ((name === 'proto' || name === 'host') && value !== undefined) read[`forwarded-${name}`] = value;
  }
  return read;
}


function sessionCookie(cookie: string | undefined): string | null {
  for (const pair of (cookie ?? '').split(';')) {
    const [name, ...value] = pair.split('=');
    if (name?.trim() === 'session') return value.join('=').trim();
  }
  return null;
}

/** graphql-js takes plain values: lossless numbers become numbers only here, after the text was recorded. */
function plainVariables(variables: unknown): Record<string, unknown> | undefined {
  if (typeof variables !== 'object' || variables === null) return undefined;
  return JSON.parse(losslessStringify(variables) ?? 'null', (_key, value: unknown) => (isLosslessNumber(value) ? Number(value) : value)) as Record<string, unknown>;
}

/**
 * The streaming type asked for when `accept` names it (clients opt into a stream by name; `*\/*` gets
 * JSON, as GraphQL servers answer it), else a GraphQL JSON type, else a streaming type.
 */
function negotiate(accept: string | undefined, stream: Directives['stream']): string | undefined {
  const negotiator = new Negotiator({ headers: { accept: accept ?? '*/*' } });
  const streamType = stream === 'sse' ? 'text/event-stream' : stream === 'multipart' ? 'multipart/mixed' : undefined;
  if (streamType !== undefined && negotiator.mediaTypes().some((range) => range.toLowerCase() === streamType)) return streamType;
  return negotiator.mediaTypes(['application/graphql-response+json', 'application/json', 'text/event-stream', 'multipart/mixed'])[0];
}

function frame(json: string, mediaType: string): string {
  if (mediaType === 'text/event-stream') return `event: next\ndata: ${json}\n\nevent: complete\ndata:\n\n`;
  if (mediaType === 'multipart/mixed') return `\r\n---\r\nContent-Type: application/json; charset=utf-8\r\n\r\n${json}\r\n-----\r\n`;
  return json;
}

function badRequest(message: string): EchoResponse & { bumps: number } {
  return { status: 400, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ errors: [{ message }] }), reusable: false, bumps: 0 };
}

function parseOrUndefined(query: string): DocumentNode | undefined {
  try {
    return parse(query);
  } catch {
    return undefined;
  }
}

function parseLossless(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return losslessParse(text);
  } catch {
    return undefined;
  }
}

function bodyText(body: Buffer): string {
  return body.toString('utf8');
}

function isUtf8(body: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(body);
    return true;
  } catch {
    return false;
  }
}

/** JSON with keys in a fixed order, so that equal descriptions are equal texts. */
function stable(value: Record<string, unknown>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b))));
}

function readRequest(req: IncomingMessage): Promise<EchoRequest> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', reject);
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      resolve({ method: req.method ?? 'GET', target: req.url ?? '/', headers, body: Buffer.concat(chunks) });
    });
  });
}

function send(res: ServerResponse, answer: EchoResponse): void {
  const bytes = Buffer.from(answer.body, 'utf8');
  res.writeHead(answer.status, { ...answer.headers, 'content-length': String(bytes.byteLength) });
  res.end(bytes);
}
