import { createHash } from 'node:crypto';
import { startDemoOrigin, type DemoOrigin, type DemoOriginOptions } from '../../src/demo/origin.js';
import { useStarted } from './lifecycle.js';

export {
  DEMO_ORIGIN_PATH,
  demoSchemaSDL,
  startDemoOrigin,
  type DemoOrigin,
  type DemoOriginOptions,
  type ForcedResponse,
  type OriginBehaviour,
  type RecordedRequest,
} from '../../src/demo/origin.js';

/**
 * One demo origin for the calling file or describe block: started in beforeAll, closed in afterAll
 * and reset before each test (beforeEach): seed data, no forced behaviour, no requests recorded, so
 * each test sees the origin as the first one did. Returns a getter for the started origin: call it
 * in tests and hooks; it throws before the origin started.
 */
export function useDemoOrigin(options: DemoOriginOptions = {}): () => DemoOrigin {
  return useStarted({
    name: 'useDemoOrigin',
    start: () => startDemoOrigin(options),
    close: (origin) => origin.close(),
    reset: (origin) => origin.reset(),
  });
}

/** The GraphQL over HTTP request parameters; over GET they travel in the query string. */
export interface GraphQLRequestParams {
  query?: string;
  operationName?: string | null;
  variables?: Record<string, unknown> | null;
  extensions?: Record<string, unknown> | null;
}

export interface GraphQLResponseJson<TData> {
  data?: TData | null;
  errors?: Array<{ message: string; path?: Array<string | number>; extensions?: Record<string, unknown> }>;
  extensions?: Record<string, unknown>;
}

export interface GraphQLHttpResult<TData> {
  status: number;
  /** Lower-case names; repeated headers joined with ", " as fetch joins them. */
  headers: Record<string, string>;
  text: string;
  /** The body parsed as JSON and typed as a GraphQL response; undefined when it is not JSON. */
  json: GraphQLResponseJson<TData> | undefined;
}

/**
 * POSTs a GraphQL request. `body` is sent as JSON, or as is when it is a string (to send broken
 * JSON). Headers default to `content-type: application/json` and `accept: application/json`;
 * those given replace them, whatever their case.
 */
export async function postGraphQL<TData = Record<string, unknown>>(
  url: string,
  body: GraphQLRequestParams | string,
  headers: Record<string, string> = {},
): Promise<GraphQLHttpResult<TData>> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...lowerCaseKeys(headers) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return readResult<TData>(response);
}

/** GETs a GraphQL request, its parameters in the query string with JSON-encoded variables and extensions. */
export async function getGraphQL<TData = Record<string, unknown>>(
  url: string,
  params: GraphQLRequestParams,
  headers: Record<string, string> = {},
): Promise<GraphQLHttpResult<TData>> {
  const response = await fetch(graphQLGetUrl(url, params), {
    headers: { accept: 'application/json', ...lowerCaseKeys(headers) },
  });
  return readResult<TData>(response);
}

export function graphQLGetUrl(url: string, params: GraphQLRequestParams): string {
  const target = new URL(url);
  if (params.query !== undefined) target.searchParams.set('query', params.query);
  if (params.operationName != null) target.searchParams.set('operationName', params.operationName);
  if (params.variables != null) target.searchParams.set('variables', JSON.stringify(params.variables));
  if (params.extensions != null) target.searchParams.set('extensions', JSON.stringify(params.extensions));
  return target.toString();
}

/** The `extensions` of an automatic persisted query request for `query`. */
export function persistedQueryExtensions(query: string): { persistedQuery: { version: 1; sha256Hash: string } } {
  return { persistedQuery: { version: 1, sha256Hash: createHash('sha256').update(query).digest('hex') } };
}

async function readResult<TData>(response: Response): Promise<GraphQLHttpResult<TData>> {
  const text = await response.text();
  return {
    status: response.status,
    headers: headerMap(response.headers),
    text,
    json: parseJson(text) as GraphQLResponseJson<TData> | undefined,
  };
}

/** Iterating `Headers` yields each `set-cookie` apart; `get` joins them like every other header. */
function headerMap(headers: Headers): Record<string, string> {
  const map: Record<string, string> = {};
  for (const [name] of headers) map[name] = headers.get(name) ?? '';
  return map;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function lowerCaseKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}
