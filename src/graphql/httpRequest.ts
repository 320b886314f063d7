import { readJsonBytes } from './canonicalVariables.js';

/**
 * GraphQL over HTTP request parameters (the GraphQL over HTTP spec, section "Request Parameters"),
 * as svc-cache decides on them (read by requestParameters.ts).
 */
export interface GraphQLParams {
  query: string | undefined;
  operationName: string | undefined;
  /** Absent and `null` both mean "no variables". */
  variables: Record<string, unknown>;
  extensions: Record<string, unknown>;
}

/** What svc-cache changes in a request it rewrites for the origin (a persisted query expanded, fields added). */
export interface OriginChanges {
  query: string;
  /** Replaces the client's (empty means none); undefined keeps the client's as sent. */
  extensions: Record<string, unknown> | undefined;
}

/**
 * The request as the origin should get it when svc-cache changed the query text or the extensions:
 * a new POST body, or a new `:path` for a GET. Every other parameter keeps its exact text as sent
 * (its raw JSON member, its URL pair), never re-serialised: the origin then runs exactly the
 * request svc-cache keyed (`1.0` stays `1.0`, `9007199254740993` keeps its digits). Only the order
 * of a body's members may change, which JSON gives no meaning (RFC 8259 section 4).
 */
export function rewrittenForOrigin(method: 'GET' | 'POST', path: string, body: Buffer, changes: OriginChanges): { path?: string; body?: Buffer } {
  return method === 'POST' ? { body: rewrittenBody(body, changes) } : { path: rewrittenPath(path, changes) };
}

function rewrittenBody(body: Buffer, changes: OriginChanges): Buffer {
  const json = readJsonBytes(body);
  // Only bodies read as one JSON object are ever rewritten; anything else is sent as it came.
  if (typeof json === 'string' || json.kind !== 'object') return body;
  const members: string[] = [];
  let querySet = false;
  for (const [name, value] of json.members ?? []) {
    if (name === 'extensions' && changes.extensions !== undefined) continue;
    if (name === 'query') {
      members.push(`"query":${JSON.stringify(changes.query)}`);
      querySet = true;
    } else {
      members.push(`${JSON.stringify(name)}:${value.raw}`);
    }
  }
  if (!querySet) members.push(`"query":${JSON.stringify(changes.query)}`);
  if (changes.extensions !== undefined && Object.keys(changes.extensions).length > 0) {
    members.push(`"extensions":${JSON.stringify(changes.extensions)}`);
  }
  return Buffer.from(`{${members.join(',')}}`);
}

function rewrittenPath(path: string, changes: OriginChanges): string {
  const queryStart = path.indexOf('?');
  const pathOnly = queryStart < 0 ? path : path.slice(0, queryStart);
  const replaced = changes.extensions === undefined ? ['query'] : ['query', 'extensions'];
  const pairs = queryStart < 0 ? [] : path.slice(queryStart + 1).split('&');
  const kept = pairs.filter((pair) => pair !== '' && !replaced.includes(parameterName(pair) ?? ''));
  const added = [`query=${encodeURIComponent(changes.query)}`];
  if (changes.extensions !== undefined && Object.keys(changes.extensions).length > 0) {
    added.push(`extensions=${encodeURIComponent(JSON.stringify(changes.extensions))}`);
  }
  return `${pathOnly}?${[...kept, ...added].join('&')}`;
}

/** The decoded name of a URL pair, undefined when it does not decode (then it is no GraphQL parameter). */
function parameterName(pair: string): string | undefined {
  const separator = pair.indexOf('=');
  try {
    return decodeURIComponent((separator < 0 ? pair : pair.slice(0, separator)).replaceAll('+', ' '));
  } catch {
    return undefined;
  }
}
