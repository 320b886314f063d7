import { request, type IncomingMessage } from 'node:http';
import type { GraphQLHttpResult, GraphQLRequestParams, GraphQLResponseJson } from './origin.js';

/**
 * A header line exactly as it goes on the wire: the name keeps its case, and a name given twice is
 * sent as two lines. `fetch` can do neither (it lower-cases names and joins repeated values).
 */
export type RawHeaderLine = readonly [name: string, value: string];

/**
 * POSTs a GraphQL request with exactly these header lines besides `host` (unless a line gives it),
 * `content-type: application/json`, `accept: application/json` and `content-length`. Empty values are sent as empty
 * lines.
 */
export function postGraphQLRaw<TData = Record<string, unknown>>(
  url: string,
  body: GraphQLRequestParams,
  lines: readonly RawHeaderLine[],
): Promise<GraphQLHttpResult<TData>> {
  const payload = Buffer.from(JSON.stringify(body));
  // Given as an array, headers replace all of node:http's defaults, Host included.
  const hostGiven = lines.some(([name]) => name.toLowerCase() === 'host');
  const headers = [
    ...(hostGiven ? [] : [['host', new URL(url).host]]),
    ['content-type', 'application/json'],
    ['accept', 'application/json'],
    ['content-length', String(payload.length)],
    ...lines,
  ].flat();
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method: 'POST', headers }, (response) => {
      readResponse(response).then(({ status, headers: joined, body: bytes }) => {
        const text = bytes.toString('utf8');
        resolve({ status, headers: joined, text, json: parseJson<TData>(text) });
      }, reject);
    });
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

/** An answer as it came on the wire: the body's bytes never decoded, repeated headers joined as fetch joins them. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export function readResponse(response: IncomingMessage): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    response.on('data', (chunk: Buffer) => chunks.push(chunk));
    response.on('error', reject);
    response.on('end', () => {
      const joined: Record<string, string> = {};
      for (const [name, value] of Object.entries(response.headers)) {
        if (value !== undefined) joined[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      resolve({ status: response.statusCode ?? 0, headers: joined, body: Buffer.concat(chunks) });
    });
  });
}

function parseJson<TData>(text: string): GraphQLResponseJson<TData> | undefined {
  try {
    return JSON.parse(text) as GraphQLResponseJson<TData>;
  } catch {
    return undefined;
  }
}
