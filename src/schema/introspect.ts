import { createHash } from 'node:crypto';
import { buildClientSchema, getIntrospectionQuery, validateSchema, type GraphQLSchema, type IntrospectionQuery } from 'graphql';
import { formatDuration } from './duration.js';
import { SchemaLoadError } from './error.js';
import { errorMessage, withoutQueryValues } from '../util/index.js';

export interface IntrospectionOptions {
  /** Ends the attempt early (the source is closing or reloading). */
  signal: AbortSignal;
  timeoutMs: number;
}

/** A schema as introspected, with a digest of the answer it was built from. */
export interface Introspection {
  schema: GraphQLSchema;
  answerDigest: string;
}

/**
 * Asks the origin for its schema with the standard introspection query. Undefined when its answer
 * has the digest `unchangedFrom` (that of the schema in use): building a schema from a large answer
 * blocks the event loop for a good part of a second, which a periodic refresh need not cost. A
 * digest, not the text: a large schema's answer runs to megabytes.
 */
export async function introspectOrigin(url: string, options: IntrospectionOptions, unchangedFrom?: string): Promise<Introspection | undefined> {
  const { status, contentType, text } = await post(url, options);
  // Messages reach logs and the unauthenticated /readyz: the URL's query may carry a key.
  const shown = withoutQueryValues(url);
  const answerDigest = createHash('sha256').update(text).digest('base64');
  if (answerDigest === unchangedFrom) return undefined;
  let body: { data?: Partial<IntrospectionQuery> | null; errors?: readonly { message?: unknown }[] };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    throw new SchemaLoadError(`${shown} answered HTTP ${status} with ${contentType ?? 'no content type'}, not a GraphQL JSON response: ${NOT_GRAPHQL_HINT}`);
  }
  if (!body?.data?.__schema) {
    const messages = Array.isArray(body?.errors) ? originMessages(body.errors) : '';
    if (messages) throw new SchemaLoadError(`${shown} refused the introspection query (HTTP ${status}): give svc-cache the origin's SDL in schema.file instead; the origin said: ${messages}`);
    throw new SchemaLoadError(`${shown} answered HTTP ${status} without an introspection result: ${NOT_GRAPHQL_HINT}`);
  }
  let schema: GraphQLSchema;
  try {
    schema = buildClientSchema(body.data as IntrospectionQuery);
  } catch (error) {
    throw new SchemaLoadError(`the introspection result from ${shown} is not a usable schema: ${(error as Error).message}`);
  }
  const problems = validateSchema(schema);
  if (problems.length > 0) {
    throw new SchemaLoadError(`the schema of ${shown} is not valid: ${problems.map((problem) => problem.message).join('; ')}`);
  }
  return { schema, answerDigest };
}

const NOT_GRAPHQL_HINT = "is origin.url the origin's GraphQL endpoint? (or give svc-cache the origin's SDL in schema.file)";

/**
 * The origin's error messages, each once and the first few only: an origin that disables
 * introspection refuses every field of the query, and forty copies of one refusal buried the hint
 * (found by a new-user run).
 */
function originMessages(errors: readonly { message?: unknown }[]): string {
  const distinct = [...new Set(errors.map((error) => String(error.message)))];
  const shown = distinct.slice(0, SHOWN_ORIGIN_MESSAGES).join('; ');
  return distinct.length > SHOWN_ORIGIN_MESSAGES ? `${shown}; and ${distinct.length - SHOWN_ORIGIN_MESSAGES} more` : shown;
}

const SHOWN_ORIGIN_MESSAGES = 3;

async function post(url: string, options: IntrospectionOptions): Promise<{ status: number; contentType: string | undefined; text: string }> {
  // A timer of our own rather than AbortSignal.timeout inside AbortSignal.any: Node 20 holds the
  // signals given to any() weakly, and a collected timeout signal never fires (seen on a loaded CI run).
  const attempt = new AbortController();
  const timer = setTimeout(() => attempt.abort(new DOMException('attempt timed out', 'TimeoutError')), options.timeoutMs);
  const cancel = (): void => attempt.abort(options.signal.reason);
  options.signal.addEventListener('abort', cancel, { once: true });
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json, application/json;q=0.9',
      },
      body: JSON.stringify({ query: getIntrospectionQuery(), operationName: 'IntrospectionQuery' }),
      signal: attempt.signal,
    });
    return { status: response.status, contentType: response.headers.get('content-type') ?? undefined, text: await response.text() };
  } catch (error) {
    throw new SchemaLoadError(describeRequestFailure(withoutQueryValues(url), attempt.signal.reason ?? error, options.timeoutMs));
  } finally {
    clearTimeout(timer);
    options.signal.removeEventListener('abort', cancel);
  }
}

const NETWORK_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_SOCKET: 'connection closed by the origin',
};

function describeRequestFailure(url: string, error: unknown, timeoutMs: number): string {
  if (error instanceof Error && error.name === 'TimeoutError') return `no answer from ${url} within ${formatDuration(timeoutMs)}`;
  const cause = error instanceof Error ? (error.cause as (Error & { code?: string }) | undefined) : undefined;
  const code = cause?.code;
  if (code !== undefined) return `cannot reach ${url}: ${NETWORK_ERRORS[code] ?? cause?.message ?? code} (${code})`;
  return `cannot reach ${url}: ${cause?.message ?? errorMessage(error)}`;
}
