import { mediaType, type HeaderList, headerValue } from '../http/headers.js';
import { isPlainObject } from '../util/index.js';

/**
 * GraphQL over HTTP request parameters (the GraphQL over HTTP spec, section "Request Parameters"),
 * read from a POST JSON body or from a GET query string.
 */
export interface GraphQLParams {
  query: string | undefined;
  operationName: string | undefined;
  /** Absent and `null` both mean "no variables". */
  variables: Record<string, unknown>;
  extensions: Record<string, unknown>;
}

export type ParsedHttpRequest =
  | {
      kind: 'graphql';
      method: 'GET' | 'POST';
      params: GraphQLParams;
      /** The POST body as sent, so a rewrite for the origin keeps every member it does not change. */
      payload?: Record<string, unknown>;
    }
  /** Something svc-cache does not interpret: it goes to the origin untouched (docs/graphql-caching.md, Cacheability). */
  | { kind: 'uninterpretable'; reason: string };

export function parseGetRequest(path: string): ParsedHttpRequest {
  const queryStart = path.indexOf('?');
  const search = new URLSearchParams(queryStart < 0 ? '' : path.slice(queryStart + 1));
  const variables = parseJsonParameter(search.get('variables'));
  const extensions = parseJsonParameter(search.get('extensions'));
  if (variables === INVALID) return { kind: 'uninterpretable', reason: 'variables is not a JSON object' };
  if (extensions === INVALID) return { kind: 'uninterpretable', reason: 'extensions is not a JSON object' };
  return {
    kind: 'graphql',
    method: 'GET',
    params: {
      query: search.get('query') ?? undefined,
      operationName: search.get('operationName') || undefined,
      variables,
      extensions,
    },
  };
}

export function parsePostRequest(headers: HeaderList, body: Buffer): ParsedHttpRequest {
  if (mediaType(headerValue(headers, 'content-type')) !== 'application/json') {
    return { kind: 'uninterpretable', reason: 'content type is not application/json' };
  }
  let payload: unknown;
  try {
    payload = JSON.parse(body.toString('utf8'));
  } catch {
    return { kind: 'uninterpretable', reason: 'body is not JSON' };
  }
  if (!isPlainObject(payload)) return { kind: 'uninterpretable', reason: 'body is not a JSON object' };
  const { query, operationName, variables, extensions } = payload;
  if (query !== undefined && query !== null && typeof query !== 'string') {
    return { kind: 'uninterpretable', reason: 'query is not a string' };
  }
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') {
    return { kind: 'uninterpretable', reason: 'operationName is not a string' };
  }
  if (variables !== undefined && variables !== null && !isPlainObject(variables)) {
    return { kind: 'uninterpretable', reason: 'variables is not an object' };
  }
  if (extensions !== undefined && extensions !== null && !isPlainObject(extensions)) {
    return { kind: 'uninterpretable', reason: 'extensions is not an object' };
  }
  return {
    kind: 'graphql',
    method: 'POST',
    payload,
    params: {
      query: query ?? undefined,
      operationName: operationName || undefined,
      variables: variables ?? {},
      extensions: extensions ?? {},
    },
  };
}

/**
 * The request as the origin should get it when svc-cache changed the query text or the extensions
 * (a persisted query expanded, fields added): a new POST body, or a new `:path` for a GET, every
 * other parameter as the client sent it.
 */
export function rewrittenForOrigin(
  request: Extract<ParsedHttpRequest, { kind: 'graphql' }>,
  path: string,
  changes: { query: string; extensions: Record<string, unknown> },
): { path?: string; body?: Buffer } {
  const hasExtensions = Object.keys(changes.extensions).length > 0;
  if (request.method === 'POST') {
    const { extensions: _extensions, ...rest } = request.payload ?? {};
    const payload = hasExtensions ? { ...rest, query: changes.query, extensions: changes.extensions } : { ...rest, query: changes.query };
    return { body: Buffer.from(JSON.stringify(payload)) };
  }
  const queryStart = path.indexOf('?');
  const search = new URLSearchParams(queryStart < 0 ? '' : path.slice(queryStart + 1));
  search.set('query', changes.query);
  if (hasExtensions) search.set('extensions', JSON.stringify(changes.extensions));
  else search.delete('extensions');
  return { path: `${queryStart < 0 ? path : path.slice(0, queryStart)}?${search.toString()}` };
}

const INVALID = Symbol('invalid');

function parseJsonParameter(raw: string | null): Record<string, unknown> | typeof INVALID {
  if (raw === null || raw === '') return {};
  try {
    const value: unknown = JSON.parse(raw);
    if (value === null) return {};
    return isPlainObject(value) ? value : INVALID;
  } catch {
    return INVALID;
  }
}
