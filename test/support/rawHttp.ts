import { request } from 'node:http';
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
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const joined: Record<string, string> = {};
        for (const [name, value] of Object.entries(response.headers)) {
          if (value !== undefined) joined[name] = Array.isArray(value) ? value.join(', ') : value;
        }
        resolve({ status: response.statusCode ?? 0, headers: joined, text, json: parseJson<TData>(text) });
      });
    });
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

function parseJson<TData>(text: string): GraphQLResponseJson<TData> | undefined {
  try {
    return JSON.parse(text) as GraphQLResponseJson<TData>;
  } catch {
    return undefined;
  }
}
