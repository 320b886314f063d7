/**
 * A `fetch` to hand to a real GraphQL client (urql's `fetch` option, Apollo's HttpLink `fetch`,
 * graphql-request's `fetch`) that records each exchange as it went on the wire: the request the
 * client built and the answer's status, headers and body text. Clients parse the body and drop the
 * headers, so this is where a test sees `svc-cache: HIT` and the exact bytes a HIT carried.
 */

export interface RecordedExchange {
  method: string;
  url: string;
  /** Lower-case names. */
  requestHeaders: Record<string, string>;
  /** The request body as text; '' for a GET. */
  requestBody: string;
  status: number;
  /** Lower-case names; repeated headers joined with ", " as fetch joins them. */
  responseHeaders: Record<string, string>;
  responseText: string;
}

export interface RecordingFetch {
  fetch: typeof fetch;
  exchanges: RecordedExchange[];
  /** The exchanges recorded since the last call, which are then forgotten. */
  take(): RecordedExchange[];
}

export function recordingFetch(): RecordingFetch {
  const exchanges: RecordedExchange[] = [];
  const record: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const requestBody = request.method === 'GET' || request.method === 'HEAD' ? '' : await request.clone().text();
    const response = await fetch(request);
    exchanges.push({
      method: request.method,
      url: request.url,
      requestHeaders: headerRecord(request.headers),
      requestBody,
      status: response.status,
      responseHeaders: headerRecord(response.headers),
      responseText: await response.clone().text(),
    });
    return response;
  };
  return {
    fetch: record,
    exchanges,
    take: () => exchanges.splice(0, exchanges.length),
  };
}

/**
 * The GraphQL parameters of a recorded request, from its URL (GET) or its JSON body (POST):
 * the query text, if any, and the persisted query hash, if any.
 */
export function graphQLParameters(exchange: RecordedExchange): { query?: string; sha256Hash?: string } {
  const parameters: { query?: unknown; extensions?: unknown } =
    exchange.method === 'GET' ? fromSearchParams(new URL(exchange.url).searchParams) : parseObject(exchange.requestBody);
  const extensions = parameters.extensions as { persistedQuery?: { sha256Hash?: unknown } } | undefined;
  const hash = extensions?.persistedQuery?.sha256Hash;
  return {
    ...(typeof parameters.query === 'string' ? { query: parameters.query } : {}),
    ...(typeof hash === 'string' ? { sha256Hash: hash } : {}),
  };
}

/** One line per exchange, for failure messages. */
export function describeExchanges(exchanges: readonly RecordedExchange[]): string {
  return exchanges
    .map(
      (exchange) =>
        `${exchange.method} ${exchange.url} accept=${exchange.requestHeaders.accept ?? '-'} ${exchange.requestBody}` +
        ` -> ${exchange.status} svc-cache=${exchange.responseHeaders['svc-cache'] ?? '-'}` +
        ` content-type=${exchange.responseHeaders['content-type'] ?? '-'} ${exchange.responseText}`,
    )
    .join('\n');
}

function fromSearchParams(search: URLSearchParams): { query?: unknown; extensions?: unknown } {
  const extensions = search.get('extensions');
  return {
    ...(search.has('query') ? { query: search.get('query') } : {}),
    ...(extensions === null ? {} : { extensions: parseObject(extensions) }),
  };
}

function parseObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function headerRecord(headers: Headers): Record<string, string> {
  const record: Record<string, string> = {};
  for (const [name] of headers) record[name] = headers.get(name) ?? '';
  return record;
}
